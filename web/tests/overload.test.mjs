// A buyer who opens the app while the node is full: the page shed says so in words and
// loads the app by itself once the node has room again, at the page the buyer asked
// for, rather than showing the API's JSON refusal.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { newPage, startBrowser, startServer } from './harness.mjs';

const overall = setTimeout(() => {
  console.error('browser tests: the overall deadline (2 min) passed');
  process.exit(1);
}, 120_000);
overall.unref();

// Every place in flight is taken by a request whose body never ends, until released.
const PLACES = 8;

let server;
let browser;

before(async () => {
  server = await startServer({
    env: {
      BOXOFFICE_HTTP__MAX_IN_FLIGHT: String(PLACES),
      BOXOFFICE_HTTP__MAX_IN_FLIGHT_PER_ADDRESS: String(PLACES),
      BOXOFFICE_HTTP__REQUEST_TIMEOUT_MS: '60000',
    },
  });
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A hold whose headers and first body chunk are sent and whose body then stalls: it
 *  holds a place among the node's requests in flight until its socket is destroyed. */
function stalledRequest(base) {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  socket.on('connect', () => {
    socket.write(
      `POST /v1/events/1/holds HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer any\r\n` +
        `Idempotency-Key: stalled-${Math.random()}\r\nContent-Type: application/json\r\n` +
        'Transfer-Encoding: chunked\r\n\r\nc\r\n{"seat_ids":\r\n',
    );
  });
  return socket;
}

/** Polls `check` every 100 ms until it is true; fails after `ms`. */
async function eventually(what, ms, check) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not within ${ms} ms`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

test('a page shed while the node is full says so and loads the page asked for by itself once there is room', { timeout: 90_000 }, async () => {
  const stalled = Array.from({ length: PLACES }, () => stalledRequest(server.base));
  // Read from /metrics, which is never shed nor counted: a request of the test's own in
  // flight while the last stalled one arrives would have that one shed instead.
  await eventually(`all ${PLACES} stalled requests in flight`, 20_000, async () => {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    return new RegExp(`^boxoffice_http_in_flight ${PLACES}$`, 'm').test(text);
  });
  assert.equal((await fetch(`${server.base}/v1/events`)).status, 503, 'the node is full');
  const page = await newPage(browser);
  const shed = await page.goto(`${server.base}/#/events`);
  assert.equal(shed.status(), 503);
  assert.match(shed.headers()['content-type'], /^text\/html/);
  await page.getByRole('heading', { name: 'Very busy right now' }).waitFor();
  assert.match(await page.textContent('body'), /load again by itself/);
  stalled.forEach((s) => s.destroy());
  // The page's own reload (3 to 8 s) brings the app, with nobody pressing anything, at
  // the address asked for, fragment and all: the list of events.
  await page.getByRole('heading', { name: 'Events', exact: true }).waitFor({ timeout: 30_000 });
  const back = new URL(page.url());
  assert.equal(back.hash, '#/events');
  assert.equal(back.search, '');
  await page.close();
});
