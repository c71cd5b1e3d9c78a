#!/usr/bin/env python3
"""Failover measurement: how long until a replica's buckets are owned again.

Starts `cronshard-sim serve` (the binary beside --bin) (one token per replica, so it can partition one) and R replicas with
the default protocol timings (renew 2 s, deadline 10 s, lease 15 s), waits until the buckets
are settled, then (a) SIGKILLs one replica and (b) partitions another, and reports the time
from the fault until every bucket the victim held has a live holder again, read from
`cronshard status -o json` polled every 200 ms. Usage (after `cargo build --release`):

    python3 scripts/failover.py [--replicas 3] [--bin target/release/cronshard]
"""
import argparse, json, os, subprocess, tempfile, time, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--replicas", type=int, default=3)
ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "cronshard"))
a = ap.parse_args()
tmp = tempfile.mkdtemp()
names = [f"replica-{i}" for i in range(a.replicas)]
with open(os.path.join(tmp, "tokens.csv"), "w") as f:
    f.write("".join(f"token-{n},{n},{i}\n" for i, n in enumerate(names + ["admin"])))


def call(method, url, body=None):
    req = urllib.request.Request(url, method=method, data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def start(args, log):
    cmd = [a.bin + "-sim", "serve"] + args[1:] if args[0] == "sim" else [a.bin] + args
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, log), "w"), text=True)
    return p, p.stdout.readline().strip()


def kubeconfig(user, url):
    path = os.path.join(tmp, f"kubeconfig-{user}")
    with open(path, "w") as f:
        f.write(f"apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: u\n"
                f"  user:\n    token: token-{user}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: u\n"
                f"    namespace: default\ncurrent-context: sim\n")
    return path


def status(url):
    out = subprocess.run([a.bin, "status", "--kubeconfig", kubeconfig("admin", url), "-o", "json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def wait_settled(url, members):
    while True:
        s = status(url)
        live = {m["identity"] for m in s["members"] if not m["expired"]}
        if not s["unowned"] and live == set(members) and all(m["buckets"] for m in s["members"] if m["identity"] in live):
            return s
        time.sleep(0.2)


def recovery(url, victim, fault):
    before = {m["identity"]: m["buckets"] for m in wait_settled(url, [n for n in names if n in running])["members"]}
    held = set(before[victim])
    t0 = time.monotonic()
    fault()
    while True:
        s = status(url)
        owners = {b: m["identity"] for m in s["members"] if not m["expired"] for b in m["buckets"]}
        if all(b in owners and owners[b] != victim for b in held):
            return time.monotonic() - t0, len(held)
        time.sleep(0.2)


sim, url = start(["sim", "--listen", "127.0.0.1:0", "--no-job-runner", "--token-file", os.path.join(tmp, "tokens.csv")], "sim.log")
running = {}
try:
    for n in names:
        running[n], _ = start(["run", "--kubeconfig", kubeconfig(n, url), "--identity", n, "--metrics-addr", "127.0.0.1:0"], n + ".log")
    wait_settled(url, names)
    took, n = recovery(url, names[0], lambda: running.pop(names[0]).kill())
    print(f"SIGKILL of {names[0]}: its {n} buckets owned again after {took:.1f} s")
    took, n = recovery(url, names[1], lambda: call("POST", url + "/sim/partition",
                                                   json.dumps({"user": names[1], "mode": "hang"}).encode()))
    print(f"partition of {names[1]}: its {n} buckets owned again after {took:.1f} s")
finally:
    for p in list(running.values()) + [sim]:
        p.terminate()
