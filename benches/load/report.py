"""Parses load-tool output for benches/load/run-all.sh and prints one `key=value` line.

`report.py wrk LABEL FILE`: wrk --latency text output -> label rps p50_ms p99_ms errors.
`report.py oha LABEL FILE`: oha --output-format json -> label rps p50_ms p99_ms max_ms n errors.
Latencies are in milliseconds with three decimals; `errors` counts non-2xx answers and
transport errors together (not oha's own cancellations at the end of a timed run).
"""
import json
import re
import sys


def wrk_ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    if not m:
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def wrk(label, path):
    out = open(path).read()
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    pct = dict(re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", out, re.M))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = int(non2xx.group(1)) if non2xx else 0
    if sock:
        errors += sum(int(x) for x in sock.groups())
    print(
        f"label={label} rps={float(rps.group(1)) if rps else 0:.0f} "
        f"p50_ms={wrk_ms(pct.get('50', '')):.3f} p99_ms={wrk_ms(pct.get('99', '')):.3f} "
        f"errors={errors}"
    )


def oha(label, path):
    try:
        data = json.load(open(path))
    except (OSError, ValueError):
        print(f"label={label} rps=0 p50_ms=nan p99_ms=nan max_ms=nan n=0 errors=-1")
        return
    summary = data.get("summary", {})
    pct = data.get("latencyPercentiles", {})
    codes = data.get("statusCodeDistribution", {}) or {}
    errs = data.get("errorDistribution", {}) or {}
    n = sum(codes.values())
    # oha ends a -z run by cancelling the requests still in flight ("aborted due to
    # deadline"): those are the tool's, not errors of the server under test.
    cut = sum(v for k, v in errs.items() if "deadline" in k)
    bad = sum(v for k, v in codes.items() if not str(k).startswith("2")) + sum(errs.values()) - cut
    ms = lambda v: float("nan") if v is None else v * 1000
    print(
        f"label={label} rps={summary.get('requestsPerSec') or 0:.0f} "
        f"p50_ms={ms(pct.get('p50')):.3f} p99_ms={ms(pct.get('p99')):.3f} "
        f"max_ms={ms(summary.get('slowest')):.3f} n={n} errors={bad}"
    )


if __name__ == "__main__":
    {"wrk": wrk, "oha": oha}[sys.argv[1]](sys.argv[2], sys.argv[3])
