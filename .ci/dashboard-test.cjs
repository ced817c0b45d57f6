// Headless Chromium test of GET /dashboard, run by .ci/run against `faregate demo`.
// Usage: node .ci/dashboard-test.cjs <gateway url> <simulator url> <client key> <admin key> <screenshot path>
// Needs playwright-core (pinned in .ci/run) on NODE_PATH and Debian's /usr/bin/chromium.
"use strict";
const { chromium } = require("playwright-core");

const [gw, sim, clientKey, adminKey, shot] = process.argv.slice(2);
const TILE = '.tile[data-key="search_flights.duffel"]';
const day = (n) => new Date(Date.now() + n * 86400e3).toISOString().slice(0, 10);

function fail(msg) { console.error("dashboard test FAILED: " + msg); process.exit(1); }
async function post(url, body, key, method = "POST") {
  const res = await fetch(url, { method, headers: Object.assign({ "content-type": "application/json" }, key ? { authorization: "Bearer " + key } : {}), body: body && JSON.stringify(body) });
  return { status: res.status, body: await res.text() };
}
async function colourWithin(page, colour, ms, what) {
  const t0 = Date.now();
  try { await page.waitForSelector(`${TILE}[data-colour="${colour}"]`, { timeout: ms }); }
  catch (e) { fail(`${what}: the search_flights tile did not turn ${colour} within ${ms} ms`); }
  console.log(`  ${what}: tile ${colour} after ${Date.now() - t0} ms`);
}

(async () => {
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on("pageerror", (e) => fail("page error: " + e.message));
    await page.goto(gw + "/dashboard");
    // Client keys are on: the page asks for one once, then reads the API with it.
    await page.waitForSelector("#keybox", { state: "visible", timeout: 5000 }).catch(() => fail("no key prompt"));
    // A key with a character no header carries (a curly quote pasted with it) is refused in the
    // box, saying why, and a key the gateway refuses asks again, saying so.
    await page.fill("#keyinput", clientKey + "\u201d");
    await page.click("#keyform button");
    await page.waitForFunction(() => document.getElementById("keyproblem").textContent.includes("printable ASCII"), null, { timeout: 2000 })
      .catch(async () => fail("a key with a curly quote is not refused in the box: " + await page.textContent("#keyproblem")));
    await page.fill("#keyinput", "wrong-" + clientKey);
    await page.click("#keyform button");
    await page.waitForFunction(() => document.getElementById("keyproblem").textContent.includes("refused") && document.getElementById("keybox").style.display === "flex", null, { timeout: 5000 })
      .catch(async () => fail("a refused key is not said so: " + await page.textContent("#keyproblem")));
    await page.fill("#keyinput", clientKey);
    await page.click("#keyform button");
    await page.waitForSelector(TILE, { timeout: 5000 }).catch(() => fail("no tile for search_flights.duffel"));
    await colourWithin(page, "green", 2000, "at start");
    await page.waitForSelector("#conn.live", { timeout: 5000 }).catch(() => fail("the event stream is not live"));
    // The store's state, from /readyz: the demo's SQLite file answers, and no banner shows.
    await page.waitForSelector('#store[data-answers="true"]', { timeout: 5000 })
      .catch(async () => fail("the store panel does not say the store answers: " + await page.innerHTML("#store")));
    if (await page.$("#storebanner.shown")) fail("the store banner shows while the store answers");
    // The replicas panel: a client key may not list the replicas (admin key), so the panel shows
    // this replica's configuration fingerprint, from /readyz, and says which key lists them.
    const fingerprint = (await (await fetch(gw + "/readyz")).json()).config.fingerprint;
    if (!/^[0-9a-f]{12}$/.test(fingerprint || "")) fail("/readyz has no configuration fingerprint: " + fingerprint);
    try {
      await page.waitForFunction((f) => { const p = document.getElementById("replicas"); return p && p.textContent.includes(f) && p.textContent.includes("admin key"); }, fingerprint, { timeout: 8000 });
    } catch (e) { fail("the replicas panel does not show this replica's fingerprint " + fingerprint + " to a client key: " + (await page.$("#replicas") ? await page.innerHTML("#replicas") : "no #replicas panel")); }
    console.log(`  replicas (client key): this replica runs ${fingerprint}`);

    // Forcing needs the admin key: the client key is refused.
    const refused = await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "open" }, clientKey);
    if (refused.status !== 403) fail("a client key could force: " + refused.status);
    const forced = await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "open" }, adminKey);
    if (forced.status !== 200) fail("force open: " + forced.status + " " + forced.body);
    await colourWithin(page, "red", 1000, "forced open");
    if (!(await page.$(`${TILE}.forced`))) fail("the forced state is not marked");
    // Times are UTC, and say so.
    const transition = await page.textContent(`${TILE} .transitions li`);
    if (!/^\d\d:\d\d:\d\d UTC /.test(transition)) fail("a transition's time is not in UTC: " + transition);

    await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "auto" }, adminKey);
    await colourWithin(page, "green", 1000, "auto");

    // A simulated flight outage at both providers of the chain (Duffel, then Amadeus): each
    // breaker opens on its own after five failed attempts in a row.
    for (const group of ["duffel_air_search", "amadeus_flights"]) {
      const outage = await post(`${sim}/_sim/faults/${group}`, { outage: true }, null, "PUT");
      if (outage.status >= 300) fail("sim fault: " + outage.status + " " + outage.body);
    }
    for (let i = 0; i < 6; i++) {
      await post(`${gw}/v1/tools/search_flights/call`, { arguments: { origin: "JFK", destination: "LHR", departure_date: day(20 + i) } }, clientKey);
    }
    await colourWithin(page, "red", 1000, "outage");
    const stateNow = await page.getAttribute(TILE, "data-state");
    if (stateNow !== "open") fail("expected state open, got " + stateNow);
    // An open breaker shows the figures that opened it, labelled so, not its emptied window
    // ("0 % · 0 calls" read as "nothing is wrong").
    const figures = await page.$eval(`${TILE} [data-figures]`, (d) => ({ kind: d.dataset.figures, label: d.previousElementSibling.textContent, text: d.textContent }));
    if (figures.kind !== "at-opening" || figures.label !== "at opening" || !/^[1-9]\d* % failed · slow \d+ % · [1-9]\d* calls$/.test(figures.text)) {
      fail("the open tile does not show the figures at opening: " + JSON.stringify(figures));
    }
    console.log(`  outage: at opening ${figures.text}`);

    // Background searches wait out the outage in the queue: the queue panel shows how many per
    // tool and how long the oldest due one has waited (the figures refresh every 5 s).
    for (let i = 0; i < 3; i++) {
      const queued = await post(`${gw}/v1/tools/search_flights/call`, { mode: "background", arguments: { origin: "JFK", destination: "LHR", departure_date: day(30 + i) } }, clientKey);
      if (queued.status !== 202) fail("background submission: " + queued.status + " " + queued.body);
    }
    const ROW = '#queue tr[data-tool="search_flights"]';
    try {
      await page.waitForFunction((row) => {
        const r = document.querySelector(row);
        return r && Number(r.dataset.queued) + Number(r.dataset.retrying) >= 3 && r.dataset.oldestDueS !== "";
      }, ROW, { timeout: 20000 });
    } catch (e) { fail("the queue panel does not show the 3 waiting search_flights jobs and their oldest due age within 20 s: " + await page.innerHTML("#queue")); }
    const row = await page.$eval(ROW, (r) => ({ queued: r.dataset.queued, retrying: r.dataset.retrying, oldest: r.dataset.oldestDueS, text: r.textContent }));
    if (!(Number(row.oldest) >= 0)) fail("oldest due age is not a number of seconds: " + JSON.stringify(row));
    if (!/\d+ s|min/.test(row.text)) fail("the oldest due age is not shown: " + JSON.stringify(row));
    console.log(`  queue: search_flights ${row.queued} queued, ${row.retrying} retrying, oldest due ${row.oldest} s`);
    await page.waitForTimeout(300);
    // Close the event stream before the screenshot (an open stream can stall screenshots).
    await page.evaluate(() => window.faregateDashboard.stop());
    await page.screenshot({ path: shot, fullPage: true });
    console.log("  screenshot: " + shot);

    // Recovery: heal the provider, hand the breaker back through closed and auto.
    await post(`${sim}/_sim/faults`, null, null, "DELETE");
    await page.evaluate(() => window.faregateDashboard.start());
    await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "closed" }, adminKey);
    await colourWithin(page, "green", 1000, "forced closed after recovery");
    await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "auto" }, adminKey);
    await page.waitForSelector(`${TILE}[data-state="closed"]:not(.forced)`, { timeout: 1000 }).catch(() => fail("not back to automatic closed"));
    if (!(await page.$(`${TILE} [data-figures="window"]`))) fail("a closed tile does not show its window's figures");
    const ok = await post(`${gw}/v1/tools/search_flights/call`, { arguments: { origin: "JFK", destination: "LHR", departure_date: day(40) } }, clientKey);
    if (!ok.body.includes('"status":"ok"')) fail("calls do not succeed after recovery: " + ok.body);

    // A client key's force button is refused with a pointer to "change key"; the admin key,
    // entered there, forces from the page.
    await page.click(`${TILE} button[data-force="open"]`);
    await page.waitForFunction(() => document.getElementById("error").textContent.includes("change key"), null, { timeout: 2000 })
      .catch(async () => fail("a refused force does not point to change key: " + await page.textContent("#error")));
    await page.click("#changekey");
    await page.waitForSelector("#keybox", { state: "visible", timeout: 2000 }).catch(() => fail("change key does not ask for a key"));
    await page.fill("#keyinput", adminKey);
    await page.click("#keyform button");
    await page.waitForSelector("#conn.live", { timeout: 5000 }).catch(() => fail("not live again after changing the key"));
    await page.click(`${TILE} button[data-force="open"]`);
    await colourWithin(page, "red", 2000, "forced open from the page with the admin key");
    await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "auto" }, adminKey);
    await colourWithin(page, "green", 2000, "auto again");

    // Figures the page cannot refresh are shown faded, and come back when it can.
    await page.route("**/v1/breakers", (route) => route.abort());
    await page.waitForSelector("body.stale", { timeout: 15000 }).catch(() => fail("the page does not fade when /v1/breakers fails"));
    await page.unroute("**/v1/breakers");
    await page.waitForSelector("body:not(.stale)", { timeout: 15000 }).catch(() => fail("the page stays faded once /v1/breakers answers again"));
    console.log("  change key, forcing from the page, faded when out of date: ok");

    // The keyboard keeps its place: a focused force button has the focus again after the tiles
    // are drawn anew (every 5 s).
    const HOTELS = '.tile[data-key="search_hotels.duffel"]';
    await page.focus(`${HOTELS} button[data-force="closed"]`);
    await page.waitForTimeout(5500);
    const focused = await page.evaluate(() => { const f = document.activeElement; return { force: f.dataset.force, key: f.closest(".tile") && f.closest(".tile").dataset.key }; });
    if (focused.force !== "closed" || focused.key !== "search_hotels.duffel") fail("a refresh takes the focus away: " + JSON.stringify(focused));

    // With the admin key the panel lists the replicas (one node: itself) with their
    // fingerprints, agreeing, and no drift shows.
    await page.waitForSelector('#replicas[data-agree="true"][data-count="1"]', { timeout: 8000 })
      .catch(async () => fail("the replicas panel does not list this one node with the admin key: " + await page.innerHTML("#replicas")));
    const here = await page.$eval("#replicas tr[data-replica]", (r) => ({ fingerprint: r.dataset.fingerprint, self: r.dataset.this, text: r.textContent }));
    if (here.fingerprint !== fingerprint || here.self !== "true") fail("the replica row is not this replica on " + fingerprint + ": " + JSON.stringify(here));
    if (await page.$("#replicas .drift")) fail("drift shows on one node");
    // A fleet whose replicas run two configurations (as GET /v1/admin/replicas says it while a
    // reload failed on one): a red block names who runs what, and the replica apart is marked.
    const seen = new Date().toISOString();
    const listed = (replica, fp) => ({ replica, fingerprint: fp, loaded_at: seen, seen_at: seen, this: replica === "replica-a" });
    const drifting = { shared: true, agree: false, live_for: "1m",
      configurations: { "aaaaaaaaaaaa": ["replica-a", "replica-b"], "bbbbbbbbbbbb": ["replica-c"] },
      replicas: [listed("replica-a", "aaaaaaaaaaaa"), listed("replica-b", "aaaaaaaaaaaa"), listed("replica-c", "bbbbbbbbbbbb")] };
    await page.route("**/v1/admin/replicas", (route) => route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(drifting) }));
    await page.waitForSelector('#replicas[data-agree="false"] .drift', { timeout: 8000 })
      .catch(async () => fail("no drift block while the replicas run two configurations: " + await page.innerHTML("#replicas")));
    const drift = await page.textContent("#replicas .drift");
    if (!/DRIFT/.test(drift) || !drift.includes("aaaaaaaaaaaa") || !drift.includes("bbbbbbbbbbbb") || !drift.includes("replica-c")) fail("the drift block does not say who runs what: " + drift);
    const apart = await page.$$eval("#replicas tr.apart", (rs) => rs.map((r) => r.dataset.replica));
    if (apart.length !== 1 || apart[0] !== "replica-c") fail("the replica apart is not the one marked: " + JSON.stringify(apart));
    await page.unroute("**/v1/admin/replicas");
    await page.waitForSelector('#replicas[data-agree="true"]', { timeout: 8000 }).catch(() => fail("the drift block stays once the replicas agree"));
    if (await page.$("#replicas .drift")) fail("the drift block stays once the replicas agree");
    console.log("  replicas (admin key): one node on its fingerprint; drift marked: ok");

    // A store that does not answer (as /readyz says it during a PostgreSQL outage): a red
    // banner says what still works, and the store panel why; both go when it answers again.
    const away = { status: "ready", tools: 9,
      fleet: { replica: "replica-test", shared: true, connected: false, mode: "degraded: the store does not answer; this replica serves reads on its own breakers and refuses bookings unsent until it returns" },
      store: { kind: "postgres", answers: false, message: "the job store does not answer (timed out): reads are served, but every booking is refused before its provider is asked" } };
    await page.route("**/readyz", (route) => route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(away) }));
    await page.waitForSelector("#storebanner.shown", { timeout: 5000 }).catch(() => fail("no banner while the store does not answer"));
    const banner = await page.textContent("#storebanner");
    if (!/bookings are refused/.test(banner) || !/reads are served/.test(banner)) fail("the banner does not say what works: " + banner);
    if ((await page.getAttribute("#store", "data-answers")) !== "false") fail("the store panel does not say the store is away");
    await page.unroute("**/readyz");
    await page.waitForSelector('#store[data-answers="true"]', { timeout: 5000 }).catch(() => fail("the store panel stays red once the store answers"));
    if (await page.$("#storebanner.shown")) fail("the banner stays once the store answers");
    console.log("  store: answers, banner while away: ok");

    // A phone's width: one column, nothing off the side of the page.
    await page.setViewportSize({ width: 390, height: 800 });
    await page.waitForTimeout(300);
    const wide = await page.evaluate(() => document.scrollingElement.scrollWidth);
    if (wide > 390) fail("at 390 px the page is " + wide + " px wide");
    console.log("  keys refused in the box, UTC times, focus kept, narrow window: ok");
    console.log("dashboard test passed");
  } finally {
    await browser.close();
  }
})().catch((e) => fail(e.stack || String(e)));
