#!/usr/bin/env python3
"""Checks the Grafana dashboard and the alert rules against real data.

Starts a short `cronshard-sim demo --shadow` (600 CronJobs, 2 replicas and `cronshard shadow`, 75 s) whose processes serve /metrics
on free ports, a Prometheus (the `prometheus` binary, e.g. Debian's package) scraping them every
2 s and evaluating the chart's alert rules, waits until the demo has run about 60 s, then runs
every panel query of the dashboard against it, both as an instant query and as a range query
over the run. A query passes when Prometheus answers `success` with at least one series holding
at least one sample that is a number (not NaN). The alert rules pass when every rule has been
evaluated with health "ok" and no error. Prints a table and the time each step took.

    python3 scripts/check_dashboard.py --cronshard-sim target/release/cronshard-sim \\
        [--dashboard charts/cronshard/files/dashboard.json] \\
        [--rules charts/cronshard/files/alerts.yaml] [--keep-open SECONDS]

Grafana-only parts of the queries are replaced the way Grafana would: `$__rate_interval` by
1m, `$__interval` by 10s, and the dashboard's template variables by their "All" value (what a
user who has selected nothing sees).

`--targets HOST:PORT,...` scrapes replicas that are already running instead of starting a demo
(for development; `--wait` then says how long to let Prometheus scrape them first).

Exit status: 0 all checks passed; 1 a query or a rule failed; 2 Prometheus or the demo could not
be started (or an argument is wrong). The demo and Prometheus are always stopped (the demo with
SIGINT, its documented clean stop that hands the buckets back, then SIGTERM and SIGKILL to its
process group; Prometheus with SIGTERM, then SIGKILL). The temporary directory is removed when
everything passed and kept (its path printed) otherwise.
"""
import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FILES = os.path.join(ROOT, "charts", "cronshard", "files")
SCRAPE_INTERVAL_S = 2


class Abort(Exception):
    """A step that cannot go on: (message, exit status)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cronshard-sim", dest="sim", help="the cronshard-sim binary, which runs the demo with the cronshard binary beside it (e.g. target/debug/cronshard-sim); required unless --targets")
    ap.add_argument("--dashboard", default=os.path.join(FILES, "dashboard.json"))
    ap.add_argument("--rules", default=os.path.join(FILES, "alerts.yaml"))
    ap.add_argument("--prometheus", default="prometheus", help="the Prometheus binary (default: from PATH)")
    ap.add_argument("--cronjobs", type=int, default=600)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--duration", default="75s", help="the demo's --duration")
    ap.add_argument("--wait", type=float, default=60.0,
                    help="seconds of demo (or of scraping --targets) before querying (default 60)")
    ap.add_argument("--keep-open", type=float, default=0.0, metavar="SECONDS",
                    help="keep Prometheus running this long after the checks, for a human to look")
    ap.add_argument("--targets", default="", help="HOST:PORT,... of running replicas: scrape them, start no demo")
    return ap.parse_args()


# ------------------------------------------------------------------------------- helpers

def free_port_block(n):
    """A port P such that P..P+n-1 are all free on 127.0.0.1 right now."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n - 1 > 65535:
            continue
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise Abort(f"found no {n} consecutive free ports", 2)


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"(cannot read {path}: {e})\n"


def stop(proc, name, first=signal.SIGTERM, grace=10.0, group=False):
    """Stops a process this script started, by its id: `first` to it, then SIGTERM and SIGKILL
    (to its process group if `group`: the demo's replicas are in the demo's group)."""
    if proc is None or proc.poll() is not None:
        return
    sequence = [(first, grace, False)]
    if first != signal.SIGTERM or group:
        sequence.append((signal.SIGTERM, 15.0, group))
    sequence.append((signal.SIGKILL, 5.0, group))
    for sig, wait, to_group in sequence:
        try:
            if to_group:
                os.killpg(proc.pid, sig)  # created by start_new_session: its pgid is its pid
            else:
                proc.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            if sig == first:
                return
            break
        except subprocess.TimeoutExpired:
            print(f"    {name} (pid {proc.pid}) still running {wait:.0f} s after {signal.Signals(sig).name}", flush=True)
    if group:
        # Escalated: whatever is left of the group (replicas of a killed demo) goes too.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Steps:
    def __init__(self):
        self.done = []
        self.t0 = time.monotonic()

    def run(self, name):
        steps = self

        class Timer:
            def __enter__(self):
                print(f"==> {name}", flush=True)
                self.t = time.monotonic()

            def __exit__(self, *exc):
                took = time.monotonic() - self.t
                steps.done.append((name, took))
                print(f"    {name}: {took:.1f} s", flush=True)

        return Timer()

    def report(self):
        print("\nTime per step:")
        for name, took in self.done:
            print(f"  {took:7.1f} s  {name}")
        print(f"  {time.monotonic() - self.t0:7.1f} s  total")


# ------------------------------------------------------------------------------- the dashboard

def dashboard_queries(path):
    """[(panel title, refId, expr as Grafana sends it)] for every target of every panel."""
    with open(path) as f:
        dash = json.load(f)
    variables = {}
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "datasource":
            continue  # chooses the data source: never inside an expr
        if v.get("includeAll"):
            value = v.get("allValue") or ".*"
        else:
            cur = v.get("current", {}).get("value", "")
            value = cur[0] if isinstance(cur, list) and cur else (cur or v.get("query", ""))
        variables[v["name"]] = value

    def substitute(expr):
        expr = expr.replace("$__rate_interval", "1m").replace("${__rate_interval}", "1m")
        expr = expr.replace("$__interval", "10s").replace("${__interval}", "10s")
        for name in sorted(variables, key=len, reverse=True):
            value = variables[name]
            expr = re.sub(r"\$\{" + re.escape(name) + r"(:[a-z]+)?\}", lambda _m: value, expr)
            expr = re.sub(r"\[\[" + re.escape(name) + r"\]\]", lambda _m: value, expr)
            expr = re.sub(r"\$" + re.escape(name) + r"\b", lambda _m: value, expr)
        return expr

    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                if "expr" in t:
                    out.append((p.get("title", "?"), t.get("refId", "?"), t["expr"], substitute(t["expr"])))

    walk(dash.get("panels", []))
    return out, variables


# ------------------------------------------------------------------------------- Prometheus

def prom_query(base, path, params):
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    try:
        body = http_get(url, timeout=30)
    except urllib.error.HTTPError as e:
        body = e.read().decode()
    except OSError as e:
        return {"status": "error", "error": str(e)}
    try:
        return json.loads(body)
    except ValueError:
        return {"status": "error", "error": body[:200]}


def count(result):
    """(series, samples, numeric samples) of a query answer."""
    data = result.get("data", {})
    kind, res = data.get("resultType"), data.get("result", [])
    if kind == "vector":
        values = [s["value"][1] for s in res]
    elif kind == "matrix":
        values = [v[1] for s in res for v in s["values"]]
    elif kind == "scalar":
        values, res = [res[1]], [res]
    else:
        values = []
    numeric = sum(1 for v in values if not math.isnan(float(v)))
    return len(res), len(values), numeric


class Procs:
    demo = None
    prom = None


def main():
    a = parse_args()
    steps = Steps()
    tmp = tempfile.mkdtemp(prefix="check-dashboard-")
    logs = {"demo": os.path.join(tmp, "demo.log"), "prometheus": os.path.join(tmp, "prometheus.log")}
    procs = Procs()
    status = 2
    try:
        status = run(a, steps, procs, tmp, logs)
    except Abort as e:
        print(f"\nerror: {e}", file=sys.stderr, flush=True)
        status = e.status
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        status = 1
    finally:
        with steps.run("stop the demo and Prometheus"):
            stop(procs.demo, "demo", first=signal.SIGINT, grace=45.0, group=True)
            stop(procs.prom, "prometheus")
            for name, p in (("demo", procs.demo), ("prometheus", procs.prom)):
                if p is not None:
                    print(f"    {name} exited with status {p.returncode}")
        if status != 0 and os.listdir(tmp):
            for name, path in logs.items():
                if os.path.exists(path) and os.path.getsize(path):
                    print(f"\n--- last lines of {name} output ({path}) ---\n{tail(path)}", end="")
            print(f"\nlogs and data kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        steps.report()
    print("\nRESULT:", {0: "PASS", 1: "FAIL", 2: "ERROR (the check could not run)"}[status])
    return status


def run(a, steps, procs, tmp, logs):
    binary = os.path.abspath(a.sim or "cronshard-sim")
    prom_bin = shutil.which(a.prometheus) or a.prometheus
    demo_log, prom_log = logs["demo"], logs["prometheus"]
    if not os.path.exists(a.dashboard):
        raise Abort(f"{a.dashboard}: no such file", 2)
    if not os.path.exists(a.rules):
        raise Abort(f"{a.rules}: no such file", 2)
    queries, variables = dashboard_queries(a.dashboard)
    print(f"{len(queries)} queries in {a.dashboard}; template variables as 'All': {variables}")

    with steps.run("check the binaries"):
        if not shutil.which(prom_bin):
            raise Abort(f"Prometheus not found ({a.prometheus}): install it (Debian: apt-get install prometheus)", 2)
        if not a.targets:
            if not a.sim:
                raise Abort("--cronshard-sim PATH is required (unless --targets)", 2)
            if not os.access(binary, os.X_OK):
                raise Abort(f"{binary}: not an executable (build it: cargo build -p cronshard -p cronshard-e2e)", 2)
            try:
                help_text = subprocess.run([binary, "demo", "--help"], capture_output=True, text=True,
                                           timeout=30).stdout
            except (OSError, subprocess.TimeoutExpired) as e:
                raise Abort(f"{binary} demo --help: {e}", 2)
            if "--metrics-port-base" not in help_text or "--shadow" not in help_text:
                raise Abort(f"{binary} demo has no --metrics-port-base or --shadow: rebuild it from a tree that "
                            "has them (or use --targets to scrape replicas started by hand)", 2)

    if a.targets:
        targets = [t.strip() for t in a.targets.split(",") if t.strip()]
        base = None
    else:
        # The replicas, then `cronshard shadow` judging them (the shadow-mode panels).
        base = free_port_block(a.replicas + 1)
        targets = [f"127.0.0.1:{base + i}" for i in range(a.replicas + 1)]
    prom_port = free_port_block(1)
    while targets and f"127.0.0.1:{prom_port}" in targets:
        prom_port = free_port_block(1)
    prom_url = f"http://127.0.0.1:{prom_port}"

    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write(
            "global:\n"
            f"  scrape_interval: {SCRAPE_INTERVAL_S}s\n"
            f"  scrape_timeout: {SCRAPE_INTERVAL_S}s\n"
            f"  evaluation_interval: {SCRAPE_INTERVAL_S}s\n"
            "rule_files:\n"
            f"  - {json.dumps(os.path.abspath(a.rules))}\n"
            "scrape_configs:\n"
            "  - job_name: cronshard\n"
            "    static_configs:\n"
            f"      - targets: {json.dumps(targets)}\n")

    with steps.run(f"start Prometheus on {prom_url}"):
        prom = subprocess.Popen(
            [prom_bin, f"--config.file={config}", f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--web.enable-lifecycle", "--log.level=warn"],
            stdout=open(prom_log, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        procs.prom = prom
        deadline = time.monotonic() + 60
        while True:
            if prom.poll() is not None:
                raise Abort(f"Prometheus exited with status {prom.returncode} at start", 2)
            try:
                http_get(f"{prom_url}/-/ready", timeout=2)
                break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise Abort("Prometheus not ready after 60 s", 2)
            time.sleep(0.3)
    start_ts = time.time()

    if a.targets:
        with steps.run(f"let Prometheus scrape {', '.join(targets)} for {a.wait:.0f} s"):
            time.sleep(a.wait)
    else:
        demo_out = os.path.join(tmp, "demo")
        cmd = [binary, "demo", "--cronjobs", str(a.cronjobs), "--replicas", str(a.replicas), "--duration",
               a.duration, "--out", demo_out, "--metrics-port-base", str(base), "--shadow"]
        with steps.run(f"start the demo ({' '.join(cmd[1:])}) until its replicas serve /metrics"):
            demo = subprocess.Popen(cmd, stdout=open(demo_log, "w"), stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            procs.demo = demo
            demo_t0 = time.monotonic()
            pending = set(targets)
            while pending:
                if demo.poll() is not None:
                    raise Abort(f"the demo exited with status {demo.returncode} before its replicas served /metrics", 2)
                for t in list(pending):
                    try:
                        http_get(f"http://{t}/metrics", timeout=2)
                        pending.discard(t)
                    except (OSError, urllib.error.URLError):
                        pass
                if time.monotonic() - demo_t0 > 120:
                    raise Abort(f"no /metrics on {', '.join(sorted(pending))} 120 s after starting the demo", 2)
                time.sleep(0.5)
        with steps.run(f"let the demo run (until {a.wait:.0f} s after its start)"):
            while time.monotonic() - demo_t0 < a.wait:
                if demo.poll() is not None:
                    raise Abort(f"the demo exited early, with status {demo.returncode}", 2)
                time.sleep(1)
            print(f"    demo: {tail(demo_log, 1).strip()}")

    failures = 0
    with steps.run("scrape targets"):
        t = prom_query(prom_url, "/api/v1/targets", {})
        for tg in t.get("data", {}).get("activeTargets", []):
            ok = tg.get("health") == "up"
            failures += not ok
            print(f"  {'OK  ' if ok else 'FAIL'}  {tg.get('scrapeUrl')}  health={tg.get('health')} "
                  f"lastError={tg.get('lastError') or '-'}")
        if not t.get("data", {}).get("activeTargets"):
            print("  FAIL  Prometheus has no active targets")
            failures += 1

    with steps.run(f"run the {len(queries)} dashboard queries (instant, and range over the run)"):
        end = time.time()
        rows = []
        for title, ref, raw, expr in queries:
            problems = []
            left = re.findall(r"\$\{?[A-Za-z_]\w*", expr)
            if left:
                problems.append(f"unresolved {', '.join(left)}")
            inst = prom_query(prom_url, "/api/v1/query", {"query": expr, "time": f"{end:.3f}"})
            rng = prom_query(prom_url, "/api/v1/query_range",
                             {"query": expr, "start": f"{start_ts:.3f}", "end": f"{end:.3f}", "step": "2s"})
            for name, r in (("instant", inst), ("range", rng)):
                if r.get("status") != "success":
                    problems.append(f"{name}: {r.get('errorType', '')} {r.get('error', '')}".strip())
            i_series, _, i_num = count(inst)
            r_series, r_samples, r_num = count(rng)
            if not problems and i_series == 0 and r_samples == 0:
                problems.append("no data: no series with a sample, instant or range")
            ok = not problems
            nan_only = ok and i_num == 0 and r_num == 0
            failures += not ok
            rows.append((ok, nan_only, title, ref, i_series, r_series, r_samples, r_num, expr, problems))
        print(f"\n{'result':7} {'series i/r':>10} {'samples':>8} {'numbers':>8}  panel [ref]\n{'':7} expr")
        for ok, nan_only, title, ref, i_series, r_series, r_samples, r_num, expr, problems in rows:
            result = "FAIL" if not ok else "OK-NaN" if nan_only else "OK"
            print(f"{result:7} {f'{i_series}/{r_series}':>10} {r_samples:>8} {r_num:>8}  {title} [{ref}]")
            print(f"{'':7} {expr}")
            for p in problems:
                print(f"{'':7} ^ {p}")
        print(f"\n{sum(r[0] for r in rows)} of {len(rows)} queries OK")
        if any(r[1] for r in rows):
            print("OK-NaN: the query is valid and its series exist, but every sample is NaN: a quantile of a\n"
                  "histogram with no observations in the window (no such event in this run; Grafana draws\n"
                  "nothing there, which is what it should show).")

    with steps.run("alert rules: evaluated without errors"):
        r = prom_query(prom_url, "/api/v1/rules", {})
        groups = r.get("data", {}).get("groups", [])
        n = 0
        for g in groups:
            for rule in g.get("rules", []):
                n += 1
                evaluated = not rule.get("lastEvaluation", "").startswith("0001-")
                ok = rule.get("health") == "ok" and not rule.get("lastError") and evaluated
                failures += not ok
                extra = f" lastError={rule.get('lastError')}" if rule.get("lastError") else ""
                if not evaluated:
                    extra += " never evaluated"
                alerts = rule.get("alerts", [])
                states = ", ".join(f"{al['state']} {json.dumps({k: v for k, v in al['labels'].items() if k not in ('alertname', 'severity', 'job')})}"
                                   for al in alerts) or "-"
                print(f"  {'OK  ' if ok else 'FAIL'}  {g['name']}/{rule.get('name')}: health={rule.get('health')} "
                      f"state={rule.get('state', '?')}{extra}; alerts: {states}")
        if n == 0:
            print(f"  FAIL  no rules loaded from {a.rules}")
            failures += 1

    if a.keep_open > 0:
        with steps.run(f"keep Prometheus open at {prom_url} for {a.keep_open:.0f} s (Ctrl-C to end)"):
            try:
                time.sleep(a.keep_open)
            except KeyboardInterrupt:
                pass

    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
