#!/usr/bin/env python3
"""Lint a Helm chart with Helm's own Go library, through the PyPI package helm-sdkpy.

    python3 -m pip install --ignore-requires-python helm-sdkpy
    python3 scripts/helm_lint.py charts/cronshard [--values FILE]... [--namespace NS]

Prints every lint message as `[SEVERITY] path: text` and exits 1 on any warning or error (the
equivalent of `helm lint --strict`), 2 when helm-sdkpy (or, for --values, PyYAML) is not
installed or the chart cannot be loaded, 0 otherwise. Severities are Helm's support.Severity:
0 UNKNOWN, 1 INFO, 2 WARNING, 3 ERROR.

Limits of helm-sdkpy (0.1.x, Helm v4 library), found by linting broken charts:
- Its Lint action takes only a chart path: no values files. With --values the script lints a
  temporary copy of the chart whose values.yaml is the chart's values.yaml deep-merged with
  the given files in order (Helm's rules: maps merge, a later scalar or list replaces, null
  deletes the key). Templates then render with those values and values.schema.json is
  checked against them, as `helm lint -f FILE` does.
- It serialises each message's Go error with encoding/json, so most messages arrive without
  their text (`{}`); only some (plain strings, deprecation notices) keep it. When a message
  has no text and a `helm` binary is found ($HELM, else PATH), the script runs
  `helm lint --strict` on the same chart and values to show the text.
"""
import argparse
import asyncio
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

SEVERITY = {0: "UNKNOWN", 1: "INFO", 2: "WARNING", 3: "ERROR"}
WARNING = 2


def merge(base, override):
    """Helm's coalescing of a values file over the chart's values."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (override or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_yaml(path):
    import yaml  # only needed for --values

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the top level is not a map")
    return data


def chart_with_values(chart, values_files, tmp):
    """A copy of `chart` whose values.yaml is the merged values (as JSON, which is YAML)."""
    copy_dir = os.path.join(tmp, os.path.basename(os.path.normpath(chart)))
    shutil.copytree(chart, copy_dir, symlinks=True)
    own = os.path.join(chart, "values.yaml")
    values = load_yaml(own) if os.path.exists(own) else {}
    for path in values_files:
        values = merge(values, load_yaml(path))
    with open(os.path.join(copy_dir, "values.yaml"), "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2)
        f.write("\n")
    return copy_dir


def text_of(err):
    """The message text helm-sdkpy passed, or None when it passed none."""
    if err is None or err == {} or err == "":
        return None
    if isinstance(err, str):
        return err
    if isinstance(err, dict) and isinstance(err.get("Message"), str):
        return err["Message"]
    return json.dumps(err, sort_keys=True)


def helm_binary_output(chart, values_files, namespace):
    helm = os.environ.get("HELM") or shutil.which("helm")
    if not helm:
        return None
    cmd = [helm, "lint", chart, "--strict", "--namespace", namespace]
    for path in values_files:
        cmd += ["--values", path]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(could not run {helm}: {e})"
    return f"$ {' '.join(cmd)}\n{run.stdout}{run.stderr}".rstrip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("chart", help="chart directory")
    ap.add_argument("--values", "-f", action="append", default=[], metavar="FILE",
                    help="values file merged over the chart's values.yaml (repeatable)")
    ap.add_argument("--namespace", "-n", default="default", help="release namespace (default: default)")
    a = ap.parse_args()

    try:
        import helm_sdkpy
    except ImportError:
        print("helm_lint: the Python package helm-sdkpy is not installed; install it with\n"
              "  python3 -m pip install --ignore-requires-python helm-sdkpy", file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(a.chart, "Chart.yaml")):
        print(f"helm_lint: {a.chart}: no Chart.yaml, not a chart directory", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="helm_lint.") as tmp:
        path = a.chart
        if a.values:
            try:
                path = chart_with_values(a.chart, a.values, tmp)
            except ImportError:
                print("helm_lint: --values needs PyYAML: python3 -m pip install pyyaml", file=sys.stderr)
                return 2
            except (OSError, ValueError) as e:
                print(f"helm_lint: {e}", file=sys.stderr)
                return 2
            except Exception as e:  # yaml.YAMLError, without importing yaml up front
                print(f"helm_lint: a values file is not valid YAML: {e}", file=sys.stderr)
                return 2
        try:
            cfg = helm_sdkpy.Configuration(namespace=a.namespace)
            result = asyncio.run(helm_sdkpy.Lint(cfg).run(os.path.abspath(path)))
        except helm_sdkpy.HelmLibraryNotFound as e:
            print(f"helm_lint: helm-sdkpy cannot load its Helm library: {e}", file=sys.stderr)
            return 2
        except helm_sdkpy.HelmError as e:
            print(f"helm_lint: {a.chart}: {e}", file=sys.stderr)
            return 2

    messages = result.get("Messages") or []
    errors = result.get("Errors") or []
    linted = result.get("TotalChartsLinted", 0)
    textless = False
    for m in messages:
        sev = m.get("Severity", 0)
        text = text_of(m.get("Err"))
        if text is None:
            textless = textless or sev >= WARNING
            text = "(no text: helm-sdkpy passes this Go error as {})"
        print(f"[{SEVERITY.get(sev, f'SEVERITY {sev}')}] {m.get('Path') or '(chart)'}: {text}")
    worst = max((m.get("Severity", 0) for m in messages), default=0)
    failed = worst >= WARNING or bool(errors) or linted < 1
    print(f"{a.chart}: {linted} chart(s) linted, {len(messages)} message(s), "
          f"{sum(m.get('Severity', 0) >= WARNING for m in messages)} warning(s) or error(s)"
          + (f" [values: {', '.join(a.values)}]" if a.values else ""))
    if failed and textless:
        out = helm_binary_output(a.chart, a.values, a.namespace)
        print(out if out else "For the messages' text run `helm lint --strict` with a Helm binary "
              "(set $HELM or put helm on PATH and this script runs it).")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
