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
    await page.fill("#keyinput", clientKey);
    await page.click("#keyform button");
    await page.waitForSelector(TILE, { timeout: 5000 }).catch(() => fail("no tile for search_flights.duffel"));
    await colourWithin(page, "green", 2000, "at start");
    await page.waitForSelector("#conn.live", { timeout: 5000 }).catch(() => fail("the event stream is not live"));
    // The store's state, from /readyz: the demo's SQLite file answers, and no banner shows.
    await page.waitForSelector('#store[data-answers="true"]', { timeout: 5000 })
      .catch(async () => fail("the store panel does not say the store answers: " + await page.innerHTML("#store")));
    if (await page.$("#storebanner.shown")) fail("the store banner shows while the store answers");

    // Forcing needs the admin key: the client key is refused.
    const refused = await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "open" }, clientKey);
    if (refused.status !== 403) fail("a client key could force: " + refused.status);
    const forced = await post(`${gw}/v1/breakers/search_flights.duffel/force`, { state: "open" }, adminKey);
    if (forced.status !== 200) fail("force open: " + forced.status + " " + forced.body);
    await colourWithin(page, "red", 1000, "forced open");
    if (!(await page.$(`${TILE}.forced`))) fail("the forced state is not marked");

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
    await page.waitForSelector("body.stale", { timeout: 8000 }).catch(() => fail("the page does not fade when /v1/breakers fails"));
    await page.unroute("**/v1/breakers");
    await page.waitForSelector("body:not(.stale)", { timeout: 8000 }).catch(() => fail("the page stays faded once /v1/breakers answers again"));
    console.log("  change key, forcing from the page, faded when out of date: ok");

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
    console.log("dashboard test passed");
  } finally {
    await browser.close();
  }
})().catch((e) => fail(e.stack || String(e)));
