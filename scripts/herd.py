#!/usr/bin/env python3
"""Herd measurement for one cronshard replica against cronshard-sim.

N CronJobs that all fire at the same minute boundary; reports Jobs created per second and
the skew (audit time of the create - scheduled time) percentiles, from the simulator's audit
log. Usage (release binaries built first):

    python3 scripts/herd.py --cronjobs 10000 [--qps 0] [--admitted-writes-per-s 0]
"""
import argparse, json, os, subprocess, tempfile, time, urllib.request
from datetime import datetime, timezone

BIN = os.path.join(os.path.dirname(__file__), "..", "target", "release", "cronshard")


def fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) % (1 << 64)
    return h


def call(method, url, body=None):
    req = urllib.request.Request(url, method=method, data=body, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def start(args):
    """Starts `cronshard ARGS`, or `cronshard-sim serve ...` for args starting with "sim"."""
    log = open(os.path.join(tempfile.gettempdir(), f"herd-{args[0]}.log"), "w")
    cmd = [BIN + "-sim", "serve"] + args[1:] if args[0] == "sim" else [BIN] + args
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    return p, p.stdout.readline().strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cronjobs", type=int, default=10000)
    ap.add_argument("--buckets", type=int, default=64)
    ap.add_argument("--qps", default="0")
    ap.add_argument("--burst", default="1000")
    ap.add_argument("--deployment-qps", default="0", help="cronshard run --deployment-qps (0: none, so --qps alone decides)")
    ap.add_argument("--admitted-writes-per-s", default="0")
    ap.add_argument("--lead-seconds", type=int, default=25)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    kc = os.path.join(tmp, "kubeconfig")
    sim, url = start(["sim", "--listen", "127.0.0.1:0", "--kubeconfig-out", kc, "--no-job-runner",
                      "--admitted-writes-per-s", a.admitted_writes_per_s])
    try:
        now = datetime.fromisoformat(json.loads(call("GET", url + "/sim/clock"))["now"].replace("Z", "+00:00")).timestamp()
        offset = (60 - int(now) % 60 - a.lead_seconds) % 60
        call("PUT", url + "/sim/clock", json.dumps({"offsetSeconds": offset}).encode())
        now = datetime.fromisoformat(json.loads(call("GET", url + "/sim/clock"))["now"].replace("Z", "+00:00")).timestamp()
        boundary = (int(now) // 60 + 1) * 60
        created = datetime.fromtimestamp(int(now), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = []
        for i in range(a.cronjobs):
            ns, name = f"team-{i % 50}", f"herd-{i:06}"
            uid = f"00000000-0000-4000-8000-{i:012x}"
            # The bucket of the uid: the k whose range [k*2^64/B, (k+1)*2^64/B) holds its hash.
            bucket = ((fnv1a(uid.encode()) + 1) * a.buckets - 1) >> 64
            lines.append(json.dumps({
                "apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": name, "namespace": ns, "uid": uid, "creationTimestamp": created,
                             "labels": {"cronshard.io/bucket": str(bucket)}},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}))
        call("POST", url + "/sim/load", "\n".join(lines).encode())
        run, metrics = start(["run", "--kubeconfig", kc, "--identity", "herd-replica", "--metrics-addr", "127.0.0.1:0",
                              "--qps", a.qps, "--burst", a.burst, "--deployment-qps", a.deployment_qps, "--buckets", str(a.buckets), "--testing-clock-from", url])
        suffix = f"-{boundary // 60}"
        times = {}
        deadline = time.time() + a.lead_seconds + 300
        since = 0
        while time.time() < deadline and len(times) < a.cronjobs:
            text = call("GET", f"{url}/sim/audit?since={since}")
            for line in text.splitlines():
                since += 1
                r = json.loads(line)
                if r["verb"] == "create" and r["resource"] == "jobs" and r["code"] == 201 and r["name"].endswith(suffix):
                    times.setdefault(r["name"], datetime.fromisoformat(r["time"].replace("Z", "+00:00")).timestamp())
            time.sleep(0.5)
        run.terminate(); run.wait(timeout=30)
        if os.environ.get("HERD_AUDIT"):
            with open(os.environ["HERD_AUDIT"], "w") as f:
                f.write(call("GET", f"{url}/sim/audit"))
            print(json.dumps({"boundary": boundary}))
        skews = sorted(t - boundary for t in times.values())
        pct = lambda p: skews[min(len(skews) - 1, int(p * len(skews)))] if skews else None
        last = skews[-1] if skews else None
        print(json.dumps({
            "cronjobs": a.cronjobs, "created": len(times), "qps": a.qps, "admitted_writes_per_s": a.admitted_writes_per_s,
            "drain_seconds": round(last, 3) if last is not None else None,
            "jobs_per_second": round(len(times) / last, 1) if last else None,
            "skew_p50": round(pct(0.50), 3) if skews else None, "skew_p99": round(pct(0.99), 3) if skews else None,
            "skew_max": round(last, 3) if last is not None else None,
        }))
    finally:
        sim.terminate(); sim.wait(timeout=30)


if __name__ == "__main__":
    main()
