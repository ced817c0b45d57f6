#!/usr/bin/env python3
"""Fixed-rate tool calls spread round-robin over several gateways, for benches/load/fleet.sh.

Usage: fleet_load.py RATE SECONDS BODY_FILE URL [URL ...]
Sends RATE requests per second in total (each on its own thread, so a slow answer never holds
the next one back), the n-th to URL n mod count, for SECONDS; prints one line of key=value:
sent, answered, http_errors (no answer or a status other than 200), and envelope statuses.
"""
import collections
import json
import sys
import threading
import time
import urllib.request


def main():
    rate, seconds, body_file, urls = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4:]
    body = open(body_file, "rb").read()
    counts = collections.Counter()
    lock = threading.Lock()

    def one(url):
        request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as res:
                status = json.load(res).get("status", "?")
                key = "status_" + status if res.status == 200 else "http_errors"
        except Exception:  # noqa: BLE001 - any failure is an error the caller saw
            key = "http_errors"
        with lock:
            counts[key] += 1
            counts["answered"] += 1

    threads = []
    start = time.monotonic()
    n = 0
    while True:
        due = start + n / rate
        if due - start >= seconds:
            break
        time.sleep(max(0.0, due - time.monotonic()))
        t = threading.Thread(target=one, args=(urls[n % len(urls)],))
        t.start()
        threads.append(t)
        n += 1
    for t in threads:
        t.join()
    counts["sent"] = n
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
