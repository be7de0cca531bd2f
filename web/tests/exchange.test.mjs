// The face-value exchange in the buyer app: a seat another fan offers is marked on the
// seat map with its price and listed beside it, and a buyer admitted by the line buys
// it from the app in one step, or, with a card that needs 3-D Secure, once they have
// confirmed at their bank.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiClient, checkPage, mapReady, newPage, startBrowser, startServer, unexpectedErrors } from './harness.mjs';

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

/** A small theatre with an exchange open until its doors a week away, opened for sale. */
async function theatreWithExchange() {
  const op = { token: server.operatorKey };
  const spec = {
    name: 'Exchange night',
    currency: 'EUR',
    tiers: [{ key: 'STALLS', name: 'Stalls', price: 2500 }],
    sections: [{ key: 'S', name: 'Stalls', tier: 'STALLS', rows: [{ label: 'A', seats: 12 }] }],
    sale: {
      max_tickets_per_buyer: 4,
      hold_ttl_s: 480,
      payment_grace_s: 120,
      admission_rate_per_s: 100,
      exchange: { doors_at: Date.now() + 7 * 24 * 3600 * 1000 },
    },
  };
  const created = await api.call('POST', '/v1/events', { ...op, body: spec });
  assert.equal(created.status, 201, JSON.stringify(created.data));
  const id = created.data.event_id;
  const opened = await api.call('POST', `/v1/events/${id}/open`, op);
  assert.equal(opened.status, 200, JSON.stringify(opened.data));
  return id;
}

/** Another fan buys a seat and offers it on the exchange for `price`: {seat, listing}. */
async function listedSeat(id, price) {
  const seller = await api.admittedBuyer(id);
  const held = await api.call('POST', `/v1/events/${id}/holds`, { token: seller.admission, body: { best_available: { section: 'S', quantity: 1 } } });
  assert.equal(held.status, 201, JSON.stringify(held.data));
  const paid = await api.call('POST', `/v1/holds/${held.data.hold_id}/checkout`, { token: seller.token, body: { payment_method: 'pm_card_visa' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.data));
  const tickets = await api.call('GET', '/v1/me/tickets', { token: seller.token });
  const ticket = tickets.data.tickets[0];
  const listed = await api.call('POST', `/v1/tickets/${ticket.ticket_id}/listings`, { token: seller.token, body: { price } });
  assert.equal(listed.status, 201, JSON.stringify(listed.data));
  return { seat: held.data.seat_ids[0], listing: listed.data.listing_id };
}

test('a seat on the exchange is marked on the map with its price and bought from the app', { timeout: 120_000 }, async () => {
  const id = await theatreWithExchange();
  const { seat, listing } = await listedSeat(id, 2000);
  const page = await newPage(browser);
  await page.goto(`${server.base}/#/events/${id}`);
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await mapReady(page);
  // The map knows the listing, on the seat the listing names, with its price.
  await page.waitForFunction(() => document.querySelector('canvas.seatmap-canvas').seatMap.listed.size === 1, null, { timeout: 30_000 });
  const marked = await page.evaluate((s) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    const i = map.byId.get(s);
    return { price: map.listed.get(i)?.price, free: map.isFree(i), said: map.describe(i) };
  }, seat);
  assert.deepEqual([marked.price, marked.free], [2000, false]);
  assert.match(marked.said, /on the exchange for €20\.00/);
  await page.getByRole('heading', { name: 'On the exchange (1)' }).waitFor();
  await checkPage(page, 'exchange-map');

  // Clicking the seat on the map offers it.
  const p = await page.evaluate((s) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    map.canvas.scrollIntoView({ block: 'center' });
    map.reveal(map.byId.get(s));
    return map.pointOf(s);
  }, seat);
  await page.mouse.click(p.x, p.y);
  await page.getByRole('heading', { name: `Seat ${seat} from the exchange, €20.00` }).waitFor();
  await checkPage(page, 'exchange-offer');
  await page.getByRole('button', { name: 'Buy for €20.00' }).click();
  await page.getByText(`Seat ${seat} is yours.`).waitFor({ timeout: 30_000 });

  // The listing is sold and off the map; the ticket is the buyer's.
  const open = await api.call('GET', `/v1/events/${id}/listings`);
  assert.deepEqual(open.data.listings.filter((l) => l.state === 'open'), []);
  assert.equal(await page.evaluate(() => document.querySelector('canvas.seatmap-canvas').seatMap.listed.size), 0);
  const token = await page.evaluate(() => JSON.parse(localStorage.getItem('boxoffice.buyer')).token);
  const mine = await api.call('GET', '/v1/me/tickets', { token });
  assert.deepEqual(mine.data.tickets.map((t) => t.seat), [seat], JSON.stringify({ listing, mine: mine.data }));
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a seat on the exchange paid with a 3-D Secure card is the buyer\u2019s once they confirm at their bank', { timeout: 120_000 }, async () => {
  const id = await theatreWithExchange();
  const { seat } = await listedSeat(id, 2500);
  const page = await newPage(browser);
  await page.goto(`${server.base}/#/events/${id}`);
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await mapReady(page);
  await page.getByRole('button', { name: `Buy ${seat} for €25.00` }).click();
  await page.getByRole('heading', { name: `Seat ${seat} from the exchange, €25.00` }).waitFor();
  await page.getByRole('radio', { name: /Test card with 3-D Secure/ }).check();
  await page.getByRole('button', { name: 'Buy for €25.00' }).click();

  // The seat is kept for the buyer, who is shown where to confirm the payment.
  await page.getByText(`Seat ${seat} is reserved for you.`).waitFor({ timeout: 30_000 });
  const link = page.getByRole('link', { name: /confirm at your bank/ });
  await link.waitFor();
  await checkPage(page, 'exchange-3ds');
  const [bank] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  await bank.getByRole('button', { name: 'Approve the payment' }).click();
  await bank.getByRole('heading', { name: 'Payment approved' }).waitFor();
  await bank.close();

  // The app follows the purchase to its end: the ticket is the buyer's.
  await page.getByText(`Seat ${seat} is yours.`).waitFor({ timeout: 30_000 });
  await checkPage(page, 'exchange-3ds-done');
  const token = await page.evaluate(() => JSON.parse(localStorage.getItem('boxoffice.buyer')).token);
  const mine = await api.call('GET', '/v1/me/tickets', { token });
  assert.deepEqual(mine.data.tickets.map((t) => t.seat), [seat], JSON.stringify(mine.data));
  const open = await api.call('GET', `/v1/events/${id}/listings`);
  assert.deepEqual(open.data.listings.filter((l) => l.state === 'open'), []);
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});
