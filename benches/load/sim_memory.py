"""The simulator's memory with its kept offers full, and how long it takes to stop.

`sim_memory.py FAREGATE_SIM_BINARY PORT SEARCHES`: starts the simulator, sends SEARCHES Duffel
flight searches (about ten offers each; the simulator keeps the last 10,000 offers for their
pages, orders and pricings), prints its VmRSS before and after, then sends SIGTERM and prints
the time until the process has exited.
"""
import json, subprocess, sys, time, urllib.request, os, datetime, signal
binary, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
p = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
time.sleep(1.0)
def rss():
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) // 1024
offers = 0
start_rss = rss()
airports = ["LHR","JFK","CDG","AMS","FRA","MAD","BCN","LAX","SFO","ORD","DXB","SIN"]
for i in range(n):
    o, d = airports[i % 12], airports[(i // 12 + i + 1) % 12]
    if o == d: d = "JFK" if o != "JFK" else "LHR"
    date = (datetime.date.today() + datetime.timedelta(days=20 + i % 60)).isoformat()
    body = json.dumps({"data": {"slices": [{"origin": o, "destination": d, "departure_date": date}],
                                "passengers": [{"type": "adult"}]}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/air/offer_requests?return_offers=true", data=body,
        headers={"Authorization": "Bearer duffel_test_sim", "Duffel-Version": "v2", "Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req) as r:
        offers += len(json.load(r)["data"]["offers"])
print(f"searches {n}, offers {offers}, RSS {start_rss} MB -> {rss()} MB")
t = time.time(); p.send_signal(signal.SIGTERM); p.wait(); print(f"SIGTERM to exit: {time.time()-t:.2f} s")
