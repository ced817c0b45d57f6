#!/usr/bin/env python3
"""The popular-routes workload for benches/load/popular.sh: many agents searching the same
popular routes at the same moment.

Usage: popular_load.py URL RATE COUNT ROUTES SEED DATE
Sends COUNT search_flights calls at RATE per second (each on its own thread, so a slow answer
never holds the next one back), over ROUTES routes drawn Zipf-distributed (s = 1: the k-th most
popular route is asked k times less often than the first) from a seeded generator, all for
departure DATE. Prints one line of JSON: calls sent, answers by status, the distinct routes
asked, answers from memory (`cached_age_s` set) and the largest `cached_age_s`, and the oldest
answer's age as measured here: every provider call issues new offer ids, so an answer whose
first offer id was seen before is that earlier answer repeated, and its age is the time since
that id first arrived (a little less than since the provider answered).
"""
import collections
import itertools
import json
import random
import sys
import threading
import time
import urllib.request

AIRPORTS = ["JFK", "LHR", "CDG", "FRA", "AMS", "MAD", "BCN", "FCO", "DXB", "SIN", "HND", "LAX"]


def routes(n):
    pairs = [(a, b) for a, b in itertools.permutations(AIRPORTS, 2)]
    random.Random(1).shuffle(pairs)
    if n > len(pairs):
        sys.exit(f"at most {len(pairs)} routes, got {n}")
    return pairs[:n]


def main():
    url, rate, count, n_routes, seed, date = sys.argv[1:7]
    rate, count, n_routes = float(rate), int(count), int(n_routes)
    rng = random.Random(int(seed))
    pool = routes(n_routes)
    weights = [1 / (k + 1) for k in range(n_routes)]
    picks = rng.choices(range(n_routes), weights=weights, k=count)
    counts = collections.Counter()
    first_seen = {}  # first offer id -> when it first arrived
    ages = []  # seconds since the same answer first arrived, for answers seen before
    cached = []  # cached_age_s of answers from memory
    lock = threading.Lock()

    def one(route):
        origin, destination = route
        body = json.dumps({"arguments": {"origin": origin, "destination": destination, "departure_date": date}}).encode()
        request = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as res:
                envelope = json.load(res)
        except Exception:  # noqa: BLE001 - any failure is an error the caller saw
            with lock:
                counts["http_errors"] += 1
            return
        arrived = time.monotonic()
        offers = (envelope.get("data") or {}).get("offers") or []
        with lock:
            counts["status_" + envelope.get("status", "?")] += 1
            if envelope.get("cached_age_s") is not None:
                cached.append(envelope["cached_age_s"])
            if offers:
                first = offers[0]["offer_id"]
                if first in first_seen:
                    ages.append(arrived - first_seen[first])
                else:
                    first_seen[first] = arrived

    threads = []
    start = time.monotonic()
    for n, pick in enumerate(picks):
        time.sleep(max(0.0, start + n / rate - time.monotonic()))
        t = threading.Thread(target=one, args=(pool[pick],))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    print(json.dumps({
        "sent": count,
        "seconds": round(time.monotonic() - start, 1),
        "routes_asked": len(set(picks)),
        "top_route_share": round(collections.Counter(picks).most_common(1)[0][1] / count, 3),
        "statuses": dict(sorted(counts.items())),
        "distinct_answers": len(first_seen),
        "from_memory": len(cached),
        "max_cached_age_s": max(cached, default=None),
        "oldest_repeat_s": round(max(ages), 2) if ages else None,
    }))


if __name__ == "__main__":
    main()
