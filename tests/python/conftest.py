"""Starts `target/debug/faregate demo` (gateway + provider simulator) on free loopback ports for
the whole session, and heals the simulator's faults after every test."""

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("FAREGATE_BIN", ROOT / "target" / "debug" / "faregate"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    def __init__(self, api: str, sim: str):
        self.api = api
        self.sim = sim
        self.mcp = f"{api}/mcp"

    def get(self, path: str, **kw) -> httpx.Response:
        return httpx.get(f"{self.api}{path}", timeout=30, **kw)

    def post(self, path: str, body) -> httpx.Response:
        return httpx.post(f"{self.api}{path}", json=body, timeout=30)

    def fault(self, group: str, **fault) -> None:
        httpx.put(f"{self.sim}/_sim/faults/{group}", json=fault, timeout=10).raise_for_status()

    def heal(self) -> None:
        """Clears the simulator's faults and puts every breaker a test tripped back to a fresh
        closed state (forced closed, then automatic), so no test inherits another's outage."""
        httpx.delete(f"{self.sim}/_sim/faults", timeout=10).raise_for_status()
        for b in self.get("/v1/breakers").json()["breakers"]:
            if b["detail"] != "closed" or b["calls_in_window"]:
                for state in ("closed", "auto"):
                    httpx.post(f"{self.api}/v1/breakers/{b['key']}/force", json={"state": state},
                               timeout=10).raise_for_status()


def start_demo(name: str, client_keys: str):
    """`faregate demo` with `FAREGATE_CLIENT_KEYS` as given ("" is auth off); yields a `Demo`."""
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing; run `cargo build` first")
    api_port, sim_port = free_port(), free_port()
    log = open(ROOT / "target" / f"python-{name}.log", "w")
    # A store of its own, new each run: two demos with other client keys are two gateways, not
    # one fleet (each would leave the other's jobs waiting for a client it does not know).
    store = ROOT / "target" / f"python-{name}.db"
    for stale in store.parent.glob(f"{store.name}*"):
        stale.unlink()
    proc = subprocess.Popen(
        [str(BINARY), "demo", "--listen", f"127.0.0.1:{api_port}", "--sim-listen", f"127.0.0.1:{sim_port}",
         "--store", f"sqlite://{store}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "FAREGATE_CLIENT_KEYS": client_keys},
    )
    d = Demo(f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{sim_port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"faregate demo exited with {proc.returncode}; see target/python-{name}.log")
            try:
                if httpx.get(f"{d.api}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("faregate demo did not become ready in 30 s")
            time.sleep(0.1)
        yield d
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def demo():
    yield from start_demo("demo", "")


KEYED_DEMO_KEY = "python-sdk-test-key"


@pytest.fixture(scope="session")
def keyed_demo():
    """A second demo with client keys on (the one key is `KEYED_DEMO_KEY`)."""
    yield from start_demo("keyed-demo", KEYED_DEMO_KEY)


@pytest.fixture(autouse=True)
def healed(request):
    yield
    if "demo" in request.fixturenames:
        request.getfixturevalue("demo").heal()


_days = iter(range(30, 300))


def fresh_date() -> str:
    """A future departure date no earlier test has searched, so no stale result can answer."""
    import datetime

    return (datetime.date.today() + datetime.timedelta(days=next(_days))).isoformat()
