"""Holds N interactive calls in flight at the gateway, for benches/load/run-all.sh (scenario 5).

`hold.py GATEWAY SIM GATEWAY_PID N BODY_FILE`: opens N keep-alive connections to GATEWAY, sends
one search_flights call on each, waits until the gateway holds all N upstream (its
`faregate_bulkhead_in_use` gauge; the simulator's flight search hangs), reads the gateway's VmRSS, then clears the simulator's faults so every call
answers, counts the calls answered 200 with an `ok` envelope, and prints one key=value line.
Bounded: gives up after 180 s.

Each call is a search of its own (an origin the simulator knows, never the body's origin or
destination, and a departure date 2 to 301 days ahead): the gateway shares one provider call among identical
concurrent reads, so N copies of one body would hold one provider call, not N. Known airports
and dates in range make every answer a real `ok` one once the hang is cleared.
"""
import asyncio
import datetime
import json
import sys
import time
import urllib.request

# Airports the simulator knows (crates/faregate-sim/src/tables.rs), as origins; not London's
# other two (LGW, STN), which the simulator refuses as a route to LHR (one city).
KNOWN = (
    "LHR MAN EDI DUB CDG ORY NCE AMS FRA MUC BER MAD BCN FCO MXP LIS ZRH VIE CPH ATH "
    "IST JFK EWR BOS IAD ATL MIA ORD DFW DEN LAX SFO SEA YYZ DXB DOH SIN HND HKG SYD"
).split()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sim_requests(sim):
    with urllib.request.urlopen(f"http://{sim}/_sim/stats", timeout=5) as r:
        return json.load(r)["groups"]["duffel_air_search"]["requests"]


def in_flight(gateway):
    """The gateway's own count of search_flights calls upstream (bulkhead slots taken)."""
    with urllib.request.urlopen(f"http://{gateway}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('faregate_bulkhead_in_use{tool="search_flights"}'):
                return int(float(line.split()[-1]))
    return 0


def searches(arguments):
    """Distinct (origin, departure date) pairs, never the body's own search (a warm-up may have
    left it in the fresh cache) nor to itself: 300 dates (2 to 301 days ahead, inside the
    simulator's 361) for each other known airport in turn."""
    skip = (arguments["origin"], arguments["destination"])
    today = datetime.datetime.now(datetime.timezone.utc).date()
    for days in range(2, 302):
        date = (today + datetime.timedelta(days=days)).isoformat()
        for origin in KNOWN:
            if origin not in skip:
                yield origin, date


def request_for(gateway, arguments, search):
    origin, date = search
    body = json.dumps(
        {"arguments": {**arguments, "origin": origin, "departure_date": date}}
    ).encode()
    return (
        b"POST /v1/tools/search_flights/call HTTP/1.1\r\nhost: " + gateway.encode()
        + b"\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(body)).encode() + b"\r\n\r\n" + body
    )


async def one(host, port, request, opened):
    reader, writer = await asyncio.open_connection(host, port)
    opened.append(writer)
    writer.write(request)
    await writer.drain()
    status = await reader.readline()
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length)
    writer.close()
    try:
        envelope = json.loads(body)
    except ValueError:
        return False
    return status.split(b" ")[1:2] == [b"200"] and envelope.get("status") == "ok"


async def main():
    gateway, sim, pid, n, body_file = sys.argv[1:]
    n, pid = int(n), int(pid)
    host, port = gateway.rsplit(":", 1)
    arguments = json.load(open(body_file))["arguments"]
    codes = searches(arguments)
    idle = rss_kib(pid)
    base = sim_requests(sim)
    opened = []
    started = time.monotonic()
    tasks = []
    # 1,000 new calls a second: a burst of 10,000 connects overflows listen backlogs (the
    # gateway's and the simulator's), and a dropped SYN is a 1 s retransmit.
    for i in range(n):
        request = request_for(gateway, arguments, next(codes))
        tasks.append(asyncio.create_task(one(host, int(port), request, opened)))
        if i % 100 == 99:
            await asyncio.sleep(0.1)
    held = 0
    while time.monotonic() - started < 180:
        try:
            held = await asyncio.to_thread(in_flight, gateway)
        except OSError:
            pass  # a busy gateway may miss one scrape; the next one counts
        if held >= n:
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(1.0)
    rss = rss_kib(pid)
    reached = time.monotonic() - started
    req = urllib.request.Request(f"http://{sim}/_sim/faults", method="DELETE")
    urllib.request.urlopen(req, timeout=5).read()
    done = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 120)
    answered = sum(1 for d in done if d is True)
    per_call = (rss - idle) * 1024 // max(held, 1)
    arrived = sim_requests(sim) - base
    print(
        f"calls={n} held={held} at_provider={arrived} seconds_to_hold={reached:.1f} "
        f"rss_idle_mib={idle / 1024:.1f} "
        f"rss_held_mib={rss / 1024:.1f} bytes_per_call={per_call} answered={answered}"
    )


asyncio.run(main())
