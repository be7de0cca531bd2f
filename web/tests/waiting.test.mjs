// Events made for the purpose: one that asks for proof of work, solved in a Web Worker
// before the join; one sold out, which the line is told; one whose holds last 10 s.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiClient, newPage, startBrowser, startServer, unexpectedErrors } from './harness.mjs';

const overall = setTimeout(() => {
  console.error('browser tests: the overall deadline (4 min) passed');
  process.exit(1);
}, 240_000);
overall.unref();

let server;
let browser;
let api;

before(async () => {
  server = await startServer();
  browser = await startBrowser();
  api = apiClient(server.base);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** A small theatre, opened for sale by the operator; its id. */
async function theatre(name, seats, holdTtlS = 480) {
  const op = { token: server.operatorKey };
  const spec = {
    name,
    currency: 'EUR',
    tiers: [{ key: 'STALLS', name: 'Stalls', price: 2500 }],
    sections: [{ key: 'S', name: 'Stalls', tier: 'STALLS', rows: [{ label: 'A', seats }] }],
    sale: { max_tickets_per_buyer: 4, hold_ttl_s: holdTtlS, payment_grace_s: 120, admission_rate_per_s: 100 },
  };
  const created = await api.call('POST', '/v1/events', { ...op, body: spec });
  assert.equal(created.status, 201, JSON.stringify(created.data));
  const id = created.data.event_id;
  const opened = await api.call('POST', `/v1/events/${id}/open`, op);
  assert.equal(opened.status, 200, JSON.stringify(opened.data));
  return id;
}

const T = { timeout: 90_000 };

test('an event that asks for proof of work has the browser solve it in a worker before joining', T, async () => {
  const id = await theatre('Proof-of-work night', 20);
  const rules = await api.call('PUT', `/v1/events/${id}/waiting-room`, { token: server.operatorKey, body: { pow_difficulty: 16 } });
  assert.equal(rules.status, 200, JSON.stringify(rules.data));
  const page = await newPage(browser);
  const joins = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith(`/v1/events/${id}/queue`)) joins.push(JSON.parse(r.postData() || '{}'));
  });
  await page.goto(`${server.base}/#/events/${id}`);
  await page.getByRole('heading', { name: 'Proof-of-work night' }).waitFor();
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 60_000 });
  assert.equal(joins.length, 2, 'a join refused for want of proof, then one with it');
  assert.ok(joins[1].pow?.nonce, JSON.stringify(joins));
  assert.deepEqual(unexpectedErrors(page, [403]), []);
  await page.closeAll();
});

test('a sold-out event is told to the buyer in the line', T, async () => {
  const id = await theatre('Sold-out night', 2);
  const other = await api.admittedBuyer(id);
  const held = await api.call('POST', `/v1/events/${id}/holds`, { token: other.admission, body: { best_available: { section: 'S', quantity: 2 } } });
  assert.equal(held.status, 201, JSON.stringify(held.data));
  const page = await newPage(browser);
  await page.goto(`${server.base}/#/events/${id}`);
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByText('Sold out.').waitFor({ timeout: 30_000 });
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a hold left alone counts down, ends, and its seat shows free again on another buyer\'s map', T, async () => {
  const id = await theatre('Short-hold night', 6, 10);
  const holder = await newPage(browser);
  const watcher = await newPage(browser);
  const freeOnWatcher = (seat) => watcher.evaluate((s) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    return map.isFree(map.byId.get(s));
  }, seat);
  for (const page of [holder, watcher]) {
    await page.goto(`${server.base}/#/events/${id}`);
    await page.getByRole('button', { name: 'Join the line' }).click();
    await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('canvas.seatmap-canvas')?.seatMap?.bits, null, { timeout: 30_000 });
  }
  await holder.getByRole('radio', { name: 'Best seats in a section' }).check();
  await holder.getByRole('button', { name: 'Hold the best seats' }).click();
  await holder.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  const seat = (await holder.locator('.picks li span').first().textContent()).trim();
  assert.match(await holder.locator('#countdown').textContent(), /^0:(0\d|10)$/);
  await watcher.waitForFunction((s) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    return map.isFree(map.byId.get(s)) === false;
  }, seat, { timeout: 5_000 });
  await holder.getByText('Your hold ran out of time and the seats went back on sale.').waitFor({ timeout: 20_000 });
  await watcher.waitForFunction((s) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    return map.isFree(map.byId.get(s)) === true;
  }, seat, { timeout: 10_000 });
  assert.equal(await freeOnWatcher(seat), true);
  for (const page of [holder, watcher]) {
    assert.deepEqual(unexpectedErrors(page), []);
    await page.closeAll();
  }
});
