// The "node with opossum" comparison of issue 18 (benches/load/run-all.sh, scenario `overhead`):
// a small Node.js gateway doing faregate's job on the healthy `search_flights` path, in front of
// the same Duffel-format upstream, with the opossum circuit breaker.
//
// Usage: node gateway.js LISTEN UPSTREAM      e.g. node gateway.js 127.0.0.1:18404 http://127.0.0.1:18401
//
// What one call does, as faregate does it (src/http/api/native.rs, src/tools/search_flights.rs,
// src/providers/duffel/): accept `POST /v1/tools/search_flights/call` with
// `{"arguments":{"origin","destination","departure_date"}}`; validate the three fields (three
// upper-case letters, different airports, a real calendar date not before today (UTC), no
// other fields: faregate's schema denies unknown ones, and this comparison does not implement
// the optional ones); call `POST /air/offer_requests?return_offers=true&supplier_timeout=7000`
// with the body faregate sends (`{"data":{"slices":[…],"passengers":[{"type":"adult"}]}}`,
// Duffel-Version v2, bearer token) through an opossum breaker (8 s timeout as faregate's
// per-attempt timeout, opens at 50 % errors over 10 s once 10 calls were seen, half-open after
// 30 s, at most 64 calls in flight as faregate's bulkhead) on a keep-alive agent; parse the
// JSON answer (the whole body, as `JSON.parse` must), check the fields it reads, sort the
// offers by total_amount (stable, unparsable amounts last), keep 10, map each to the same
// normalized offer faregate's envelope carries in `data.offers[]` (offer_id, total_amount,
// total_currency, airline {iata_code, name}, slices [{origin, destination, departing_at,
// arriving_at, duration_minutes, stops, flights}], expires_at), write the same text for a model
// (`content`), remember the result for a stale answer when the breaker is open, and answer
// faregate's envelope (call_id, tool, status, content, data, stale_age_s, cached_age_s,
// retry_after_s, breaker, job_id, provider).
//
// Not done, because faregate's healthy path does not spend on it in this scenario, or it
// would only make node slower: a second provider in the chain, retries (faregate retries
// only failed attempts), metrics and tracing (faregate records both on every call; so this
// comparison flatters node).
//
// One node process, one thread for JavaScript: node's usual deployment is one process per
// core behind a balancer, but opossum's breaker state lives in its process, so N processes
// are N breakers that each learn an outage on their own. faregate runs one process on both
// cores with one breaker per tool and provider; that difference is part of what the
// comparison shows (BENCHMARKS.md, "Issue 18 targets, measured (session 28)").
'use strict';

const http = require('node:http');
const crypto = require('node:crypto');
const CircuitBreaker = require('opossum');

const [listen, upstream] = process.argv.slice(2);
if (!listen || !upstream) {
  console.error('usage: node gateway.js HOST:PORT UPSTREAM_URL');
  process.exit(2);
}
const [host, port] = [listen.slice(0, listen.lastIndexOf(':')), Number(listen.slice(listen.lastIndexOf(':') + 1))];
const up = new URL(upstream);

const TIMEOUT_MS = 8000; // faregate's per-attempt timeout for search_flights
const MAX_REQUEST_BYTES = 64 * 1024;
const MAX_UPSTREAM_BYTES = 32 * 1024 * 1024; // faregate's MAX_BODY_BYTES
const MAX_RESULTS = 10;
const STALE_FOR_MS = 15 * 60 * 1000; // the tool's stale_for
const TOKEN = process.env.DUFFEL_ACCESS_TOKEN || 'bench-token';
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 });
const stale = new Map(); // "JFK|LHR|2026-12-23" -> {data, content, at}

class UpstreamError extends Error {}

// One provider call: the request faregate's Duffel adapter sends, the whole answer read.
function offerRequest(args) {
  const body = JSON.stringify({
    data: {
      slices: [{ origin: args.origin, destination: args.destination, departure_date: args.departure_date }],
      passengers: [{ type: 'adult' }],
    },
  });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: up.hostname,
        port: up.port,
        method: 'POST',
        path: '/air/offer_requests?return_offers=true&supplier_timeout=7000',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'duffel-version': 'v2',
          accept: 'application/json',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks = [];
        let size = 0;
        res.on('data', (c) => {
          size += c.length;
          if (size > MAX_UPSTREAM_BYTES) {
            req.destroy(new UpstreamError(`response body exceeds the ${MAX_UPSTREAM_BYTES}-byte limit`));
          } else {
            chunks.push(c);
          }
        });
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode === 202 || res.statusCode < 200 || res.statusCode > 299) {
            reject(new UpstreamError(`Duffel answered HTTP ${res.statusCode}`));
            return;
          }
          try {
            resolve(JSON.parse(Buffer.concat(chunks, size)));
          } catch (e) {
            reject(new UpstreamError(`HTTP ${res.statusCode} body is not JSON: ${e.message}`));
          }
        });
      },
    );
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new UpstreamError('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

// The provider call the breaker judges: the request and the answer's decoding, so a malformed
// answer counts as a failure, as it does in faregate.
async function searchFlights(args) {
  return flightsOutput(args, await offerRequest(args));
}

const RESET_MS = 30000;
const breaker = new CircuitBreaker(searchFlights, {
  timeout: TIMEOUT_MS,
  errorThresholdPercentage: 50,
  volumeThreshold: 10,
  rollingCountTimeout: 10000,
  resetTimeout: RESET_MS,
  capacity: 64,
});

// --- arguments ------------------------------------------------------------------------------

const IATA = /^[A-Z]{3}$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function today() {
  return new Date().toISOString().slice(0, 10);
}

// The field errors, empty when the arguments are good.
function check(args) {
  const errors = [];
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return [{ field: 'arguments', message: 'expected an object' }];
  }
  for (const key of Object.keys(args)) {
    if (key !== 'origin' && key !== 'destination' && key !== 'departure_date') {
      errors.push({ field: key, message: 'unknown field' });
    }
  }
  for (const f of ['origin', 'destination']) {
    if (typeof args[f] !== 'string' || !IATA.test(args[f])) {
      errors.push({ field: f, message: 'expected a 3-letter IATA code in upper case, e.g. "JFK"' });
    }
  }
  if (IATA.test(args.origin) && args.origin === args.destination) {
    errors.push({ field: 'destination', message: 'must differ from origin; to search a round trip, set return_date' });
  }
  const d = typeof args.departure_date === 'string' ? DATE.exec(args.departure_date) : null;
  const t = today();
  if (!d) {
    errors.push({ field: 'departure_date', message: `expected YYYY-MM-DD, e.g. ${t}` });
  } else {
    const date = new Date(Date.UTC(+d[1], +d[2] - 1, +d[3]));
    if (date.getUTCFullYear() !== +d[1] || date.getUTCMonth() !== +d[2] - 1 || date.getUTCDate() !== +d[3]) {
      errors.push({ field: 'departure_date', message: `"${args.departure_date}" is not a calendar date; expected YYYY-MM-DD, e.g. ${t}` });
    } else if (args.departure_date < t) {
      errors.push({ field: 'departure_date', message: `${args.departure_date} is in the past; expected ${t} or a later date` });
    }
  }
  return errors;
}

// --- the answer -----------------------------------------------------------------------------

function str(v, what) {
  if (typeof v !== 'string') throw new UpstreamError(`body does not match Duffel's documented shape: ${what} is not a string`);
  return v;
}

function arr(v, what) {
  if (!Array.isArray(v)) throw new UpstreamError(`body does not match Duffel's documented shape: ${what} is not an array`);
  return v;
}

// Minutes in an ISO-8601 duration (PT07H05M, P1DT2H); null when unreadable.
function isoMinutes(d) {
  const m = typeof d === 'string' ? /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/.exec(d) : null;
  if (!m) return null;
  return (+(m[1] || 0)) * 1440 + (+(m[2] || 0)) * 60 + (+(m[3] || 0));
}

function amountKey(a) {
  const n = Number.parseFloat(a);
  return Number.isFinite(n) ? n : Number.MAX_VALUE;
}

function slice(s) {
  const segments = arr(s.segments, 'slice.segments');
  let segmentMinutes = 0;
  const flights = [];
  for (const seg of segments) {
    segmentMinutes += isoMinutes(seg.duration) || 0;
    const carrier = seg.marketing_carrier && typeof seg.marketing_carrier.iata_code === 'string' ? seg.marketing_carrier.iata_code : '';
    flights.push(carrier + str(seg.marketing_carrier_flight_number, 'segment.marketing_carrier_flight_number'));
  }
  const own = isoMinutes(s.duration);
  return {
    origin: str(s.origin && s.origin.iata_code, 'slice.origin.iata_code'),
    destination: str(s.destination && s.destination.iata_code, 'slice.destination.iata_code'),
    departing_at: segments.length ? str(segments[0].departing_at, 'segment.departing_at') : '',
    arriving_at: segments.length ? str(segments[segments.length - 1].arriving_at, 'segment.arriving_at') : '',
    duration_minutes: own === null ? segmentMinutes : own,
    stops: Math.max(segments.length - 1, 0),
    flights,
  };
}

function offer(o) {
  return {
    offer_id: str(o.id, 'offer.id'),
    total_amount: str(o.total_amount, 'offer.total_amount'),
    total_currency: str(o.total_currency, 'offer.total_currency'),
    airline: {
      iata_code: o.owner && typeof o.owner.iata_code === 'string' ? o.owner.iata_code : '',
      name: str(o.owner && o.owner.name, 'offer.owner.name'),
    },
    slices: arr(o.slices, 'offer.slices').map(slice),
    expires_at: str(o.expires_at, 'offer.expires_at'),
  };
}

function flightsOutput(args, answer) {
  const data = answer && answer.data;
  const offers = arr(data && data.offers, 'data.offers');
  const sorted = offers.slice().sort((x, y) => amountKey(x.total_amount) - amountKey(y.total_amount));
  return {
    origin: args.origin,
    destination: args.destination,
    departure_date: args.departure_date,
    offers: sorted.slice(0, MAX_RESULTS).map(offer),
    total_offers: offers.length,
  };
}

const minutesText = (m) => `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
const totalMinutes = (o) => o.slices.reduce((n, s) => n + s.duration_minutes, 0);

function describe(o) {
  const first = o.slices[0];
  if (!first) return o.airline.iata_code;
  const stops = first.stops === 0 ? 'nonstop' : first.stops === 1 ? '1 stop' : `${first.stops} stops`;
  return `${first.flights.join('+')}, ${stops}, ${minutesText(first.duration_minutes)}, departs ${first.departing_at.replace('T', ' ')}`;
}

// The text a model can quote, as faregate's search_flights::content writes it.
function content(out) {
  const route = `${out.origin}→${out.destination} on ${out.departure_date}`;
  if (out.offers.length === 0) {
    return `No flight offers found ${route}. Suggest other dates or nearby airports; do not invent flights.`;
  }
  let cheapest = out.offers[0];
  for (const o of out.offers) if (amountKey(o.total_amount) < amountKey(cheapest.total_amount)) cheapest = o;
  let text = `${Math.max(out.total_offers, out.offers.length)} offers ${route}`;
  if (out.total_offers > out.offers.length) text += ` (showing the ${out.offers.length} cheapest)`;
  text += `, cheapest ${cheapest.total_amount} ${cheapest.total_currency} (${cheapest.airline.name}; ${describe(cheapest)})`;
  let fastest = out.offers[0];
  for (const o of out.offers) if (totalMinutes(o) < totalMinutes(fastest)) fastest = o;
  if (fastest.offer_id !== cheapest.offer_id && totalMinutes(fastest) < totalMinutes(cheapest)) {
    text += `, fastest ${fastest.total_amount} ${fastest.total_currency} (${fastest.airline.name}; ${describe(fastest)})`;
  }
  return `${text}. Prices are for all passengers; offers expire in about 30 minutes, so confirm with price_flight_offer before booking.`;
}

function envelope(callId, status, fields) {
  return {
    call_id: callId,
    tool: 'search_flights',
    status,
    content: '',
    data: null,
    stale_age_s: null,
    cached_age_s: null,
    retry_after_s: null,
    breaker: breaker.opened ? 'open' : breaker.halfOpen ? 'half_open' : 'closed',
    job_id: null,
    provider: null,
    ...fields,
  };
}

function send(res, code, value) {
  const body = JSON.stringify(value);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

async function call(req, res, raw) {
  const callId = req.headers['x-call-id'] || crypto.randomUUID();
  let args;
  try {
    const body = JSON.parse(raw);
    args = body && typeof body === 'object' ? body.arguments : undefined;
  } catch (e) {
    send(res, 400, { error: `the body is not JSON: ${e.message}` });
    return;
  }
  const errors = check(args);
  if (errors.length) {
    const text = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    send(res, 422, envelope(callId, 'invalid_arguments', { content: `The arguments need fixing: ${text}.` }));
    return;
  }
  const key = `${args.origin}|${args.destination}|${args.departure_date}`;
  try {
    const out = await breaker.fire(args);
    const text = content(out);
    stale.set(key, { data: out, content: text, at: Date.now() });
    send(res, 200, envelope(callId, 'ok', { content: text, data: out, provider: 'duffel' }));
  } catch (e) {
    const kept = stale.get(key);
    const retry = RESET_MS / 1000;
    if (kept && Date.now() - kept.at <= STALE_FOR_MS) {
      send(res, 200, envelope(callId, 'stale', {
        content: kept.content,
        data: kept.data,
        stale_age_s: Math.floor((Date.now() - kept.at) / 1000),
        retry_after_s: retry,
        provider: 'duffel',
      }));
    } else {
      send(res, 200, envelope(callId, 'unavailable', {
        content: 'Flight search is unavailable right now; try again in a minute. Do not invent flights.',
        retry_after_s: retry,
        provider: 'duffel',
      }));
    }
  }
}

const server = http.createServer({ keepAliveTimeout: 75000 }, (req, res) => {
  if (req.url !== '/v1/tools/search_flights/call') {
    send(res, 404, { error: 'not found' });
    return;
  }
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    send(res, 405, { error: 'method not allowed' });
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size <= MAX_REQUEST_BYTES) chunks.push(c);
  });
  req.on('end', () => {
    if (size > MAX_REQUEST_BYTES) {
      send(res, 413, { error: `the body is larger than ${MAX_REQUEST_BYTES} bytes` });
      return;
    }
    call(req, res, Buffer.concat(chunks, size).toString('utf8')).catch((e) => {
      send(res, 500, { error: String(e && e.message) });
    });
  });
});
server.listen(port, host, () => console.log(`node ${process.version} + opossum gateway on ${listen} -> ${upstream}`));
