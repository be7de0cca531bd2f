// A buyer in headless Chromium, as a person would use the box office: join the line,
// be admitted, pick seats on the map, hold, pay, see the tickets; a declined card; a
// reload in the line; the keyboard alone; names for every control; a phone's width.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { join } from 'node:path';
import { ARTIFACTS, apiClient, joinAndWaitForTurn, mapReady, newPage, startBrowser, startServer, unexpectedErrors } from './harness.mjs';

// The whole file's deadline: whatever hangs, the run ends.
const overall = setTimeout(() => {
  console.error('browser tests: the overall deadline (5 min) passed');
  process.exit(1);
}, 300_000);
overall.unref();

let server;
let browser;

before(async () => {
  server = await startServer();
  browser = await startBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const T = { timeout: 90_000 };

test('a buyer joins, is admitted, picks two seats on the map, pays and sees the tickets', T, async () => {
  const page = await newPage(browser);
  await joinAndWaitForTurn(page, server.base);
  await page.screenshot({ path: join(ARTIFACTS, 'map-1280.png') });
  const seats = await page.evaluate(() => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    map.canvas.scrollIntoView({ block: 'center' });
    const ids = map.freeSeats('L2', 2);
    map.reveal(map.byId.get(ids[0]));
    return ids;
  });
  assert.equal(seats.length, 2);
  for (const id of seats) {
    const p = await page.evaluate((seat) => document.querySelector('canvas.seatmap-canvas').seatMap.pointOf(seat), id);
    await page.mouse.click(p.x, p.y);
  }
  await page.getByRole('heading', { name: 'Your picks (2 of at most 4)' }).waitFor();
  await page.getByRole('button', { name: 'Hold these 2 seats' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  assert.match(await page.locator('#countdown').textContent(), /^\d+:\d\d$/);
  await page.screenshot({ path: join(ARTIFACTS, 'hold-1280.png') });
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.getByRole('heading', { name: 'You have your tickets' }).waitFor({ timeout: 30_000 });
  const tickets = await page.locator('.tickets').textContent();
  for (const id of seats) assert.ok(tickets.includes(id), `${id} in ${tickets}`);
  await page.getByRole('link', { name: 'See all my orders' }).click();
  await page.getByRole('heading', { name: 'My orders' }).waitFor();
  await page.getByText(/^Confirmed/).first().waitFor();
  await page.screenshot({ path: join(ARTIFACTS, 'orders-1280.png') });
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a declined card is explained in plain words', T, async () => {
  const page = await newPage(browser);
  await joinAndWaitForTurn(page, server.base);
  await page.getByRole('radio', { name: 'Best seats in a section' }).check();
  await page.getByLabel('How many').first().selectOption('1');
  await page.getByRole('button', { name: 'Hold the best seats' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  await page.getByRole('radio', { name: /Test card that is declined/ }).check();
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.getByRole('alert').filter({ hasText: 'Your card was declined. No money was taken.' }).waitFor();
  assert.deepEqual(unexpectedErrors(page, [402]), []);
  await page.closeAll();
});

/** Holds the best seat of a section and starts paying with `method`. */
async function holdAndPay(page, methodName) {
  await page.getByRole('radio', { name: 'Best seats in a section' }).check();
  await page.getByRole('button', { name: 'Hold the best seats' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  const seat = (await page.locator('.picks li span').first().textContent()).trim();
  await page.getByRole('radio', { name: methodName }).check();
  await page.getByRole('button', { name: /^Pay / }).click();
  return seat;
}

/** Follows the payment's link to the test bank and answers there. */
async function answerAtTheBank(page, button) {
  await page.getByText('Payment not confirmed yet.').waitFor();
  const [bank] = await Promise.all([
    page.context().waitForEvent('page'),
    page.getByRole('link', { name: /confirm at your bank/ }).click(),
  ]);
  await bank.getByRole('button', { name: button }).click();
  await bank.getByRole('heading', { name: /Payment (approved|declined)/ }).waitFor();
  await bank.close();
}

for (const method of [/Test card with 3-D Secure/, /Bank payment/]) {
  test(`a payment the bank must confirm (${method.source}) is shown pending, then confirmed once approved`, T, async () => {
    const page = await newPage(browser);
    await joinAndWaitForTurn(page, server.base);
    const seat = await holdAndPay(page, method);
    await answerAtTheBank(page, 'Approve the payment');
    await page.getByRole('heading', { name: 'You have your tickets' }).waitFor({ timeout: 30_000 });
    assert.ok((await page.locator('.tickets').textContent()).includes(seat));
    assert.deepEqual(unexpectedErrors(page), []);
    await page.closeAll();
  });
}

test('a 3-D Secure payment declined at the bank is explained and leaves the seat free', T, async () => {
  const page = await newPage(browser);
  await joinAndWaitForTurn(page, server.base);
  const seat = await holdAndPay(page, /Test card with 3-D Secure/);
  await answerAtTheBank(page, 'Decline the payment');
  await page.getByText('The payment did not go through').waitFor({ timeout: 30_000 });
  await page.waitForFunction((s) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    return map.isFree(map.byId.get(s)) === true;
  }, seat, { timeout: 10_000 });
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a reload keeps the queue ticket', T, async () => {
  const page = await newPage(browser);
  await page.goto(`${server.base}/`);
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: /You are in the line|It\u2019s your turn/ }).waitFor();
  const ticket = () => page.evaluate(() => JSON.parse(sessionStorage.getItem('boxoffice.queue.1'))?.ticket);
  const before = await ticket();
  assert.ok(before, 'a queue ticket is kept');
  await page.reload();
  await page.getByRole('heading', { name: /You are in the line|It\u2019s your turn/ }).waitFor();
  assert.equal(await ticket(), before);
  assert.equal(await page.getByRole('button', { name: 'Join the line' }).count(), 0);
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

/** Clicks a seat of the map by its id (scrolled and zoomed into view first). */
async function clickSeat(page, seat) {
  const p = await page.evaluate((id) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    map.canvas.scrollIntoView({ block: 'center' });
    map.reveal(map.byId.get(id));
    return map.pointOf(id);
  }, seat);
  await page.mouse.click(p.x, p.y);
}

test('a seat another buyer takes shows as taken within 2 s and the buyer is told in plain words', T, async () => {
  const page = await newPage(browser);
  await joinAndWaitForTurn(page, server.base);
  const [seat] = await page.evaluate(() => document.querySelector('canvas.seatmap-canvas').seatMap.freeSeats('L3', 1));
  await clickSeat(page, seat);
  await page.getByRole('heading', { name: 'Your picks (1 of at most 4)' }).waitFor();
  const api = apiClient(server.base);
  const other = await api.admittedBuyer(1);
  const held = await api.call('POST', '/v1/events/1/holds', { token: other.admission, body: { seat_ids: [seat] } });
  assert.equal(held.status, 201, JSON.stringify(held.data));
  const started = Date.now();
  await page.getByText(`Someone else just took ${seat}.`).waitFor({ timeout: 5_000 });
  const took = Date.now() - started;
  assert.ok(took <= 2_000, `the map learnt of the hold after ${took} ms`);
  assert.equal(await page.evaluate((id) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    return map.isFree(map.byId.get(id));
  }, seat), false);
  await page.getByRole('heading', { name: 'No seats picked yet' }).waitFor();
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a seat taken between the pick and the hold is explained and the best seats of its section are offered', T, async () => {
  const page = await newPage(browser);
  // A map that never hears of changes, so the pick outlives the other buyer's hold.
  await page.route('**/availability**', (route) => route.abort());
  await page.goto(`${server.base}/`);
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  const seat = 'L4-2-5';
  const api = apiClient(server.base);
  const other = await api.admittedBuyer(1);
  const held = await api.call('POST', '/v1/events/1/holds', { token: other.admission, body: { seat_ids: [seat] } });
  assert.equal(held.status, 201, JSON.stringify(held.data));
  await page.getByLabel('Add a seat by its name').fill(seat);
  await page.getByRole('button', { name: 'Add seat' }).click();
  await page.getByRole('button', { name: 'Hold this seat' }).click();
  await page.getByText('Those seats are gone.').waitFor();
  await page.getByRole('button', { name: 'Hold the best 1 in Lower stand 4 instead' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  const got = await page.locator('.picks li').first().textContent();
  assert.ok(got.startsWith('L4-') && !got.startsWith(seat), got);
  assert.deepEqual(unexpectedErrors(page, [409], ['ERR_FAILED']), []);
  await page.closeAll();
});

/** Presses Tab until the focused element matches, at most `max` times. */
async function tabTo(page, matches, max = 60) {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const found = await page.evaluate(matches);
    if (found) return;
  }
  throw new Error(`Tab never reached the element (${matches})`);
}

test('a buyer\u2019s token is renewed once half its life has passed, and a refused one starts a new visit that says so', T, async () => {
  const page = await newPage(browser);
  const saved = () => page.evaluate(() => JSON.parse(localStorage.getItem('boxoffice.buyer')));
  const edit = (change) => page.evaluate((c) => {
    const b = JSON.parse(localStorage.getItem('boxoffice.buyer'));
    localStorage.setItem('boxoffice.buyer', JSON.stringify({ ...b, ...c }));
  }, change);
  const orders = async () => {
    await page.getByRole('heading', { name: 'My orders' }).waitFor();
    await page.getByText('You have no orders yet.').waitFor();
  };
  const renewals = [];
  page.on('response', (r) => {
    if (r.url().endsWith('/v1/me/token')) renewals.push(r.status());
  });
  await page.goto(`${server.base}/#/orders`);
  await orders();
  const first = await saved();
  const day = 86_400_000;
  assert.ok(first.expires_at > Date.now() + 29 * day, JSON.stringify(first));
  assert.ok(Math.abs(first.renew_at - (Date.now() + 15 * day)) < day, JSON.stringify(first));
  // Not due yet: the next visit keeps the token as it is.
  await page.reload();
  await orders();
  assert.deepEqual(await saved(), first);
  assert.deepEqual(renewals, []);
  // Half its life has passed: the next visit renews it, for the same buyer. (Within
  // the second of its sign-up the new token may read as the old: same claims.)
  await edit({ renew_at: Date.now() - 1 });
  await page.reload();
  await orders();
  assert.deepEqual(renewals, [201]);
  const renewed = await saved();
  assert.equal(renewed.buyer_id, first.buyer_id);
  assert.ok(renewed.renew_at > Date.now() + 14 * day, JSON.stringify(renewed));
  assert.equal(await page.getByText('Your earlier visit on this device had ended').count(), 0);
  // A token the box office refuses (lapsed after a long absence, or not its own): a
  // new visit starts, and the page says why the orders are not shown.
  await edit({ token: `${renewed.token.slice(0, -4)}AAAA`, renew_at: 0 });
  await page.reload();
  await page.getByText('Your earlier visit on this device had ended').waitFor();
  await orders();
  assert.deepEqual(renewals, [201, 401]);
  const fresh = await saved();
  assert.notEqual(fresh.buyer_id, first.buyer_id);
  assert.ok(fresh.renew_at > Date.now() + 14 * day, JSON.stringify(fresh));
  assert.deepEqual(unexpectedErrors(page, [401]), []);
  await page.closeAll();
});

test('a buyer can join, pick a seat, hold and pay with the keyboard alone', T, async () => {
  const page = await newPage(browser);
  await page.goto(`${server.base}/`);
  await page.getByRole('button', { name: 'Join the line' }).waitFor();
  await tabTo(page, () => document.activeElement?.id === 'join');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await mapReady(page);
  await tabTo(page, () => document.activeElement?.classList.contains('seatmap-canvas'));
  for (let i = 0; i < 20; i++) {
    await page.keyboard.press('Enter');
    const picked = await page.evaluate(() => document.querySelector('canvas.seatmap-canvas').seatMap.selected.size);
    if (picked === 1) break;
    await page.keyboard.press('ArrowRight');
  }
  await page.getByRole('heading', { name: 'Your picks (1 of at most 4)' }).waitFor();
  await tabTo(page, () => document.activeElement?.textContent === 'Hold this seat');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  await tabTo(page, () => document.activeElement?.id === 'pay');
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'You have your tickets' }).waitFor({ timeout: 30_000 });
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

// Not a full audit: the checks that catch the common failures (a control without a
// name, text below WCAG AA contrast, a page without language or title).
function basicAccessibility() {
  const problems = [];
  const nameOf = (el) => {
    const label = el.getAttribute('aria-label');
    if (label) return label.trim();
    const by = el.getAttribute('aria-labelledby');
    if (by) return by.split(/\s+/).map((id) => document.getElementById(id)?.textContent || '').join(' ').trim();
    if (el.labels?.length) return [...el.labels].map((l) => l.textContent).join(' ').trim();
    if (['BUTTON', 'A'].includes(el.tagName)) return el.textContent.trim();
    return (el.getAttribute('title') || '').trim();
  };
  const visible = (el) => el.getClientRects().length > 0;
  for (const el of document.querySelectorAll('button, a[href], input:not([type=hidden]), select, textarea, progress, [tabindex]:not([tabindex="-1"])')) {
    if (visible(el) && !nameOf(el)) problems.push(`no accessible name: ${el.outerHTML.slice(0, 80)}`);
  }
  if (!document.documentElement.lang) problems.push('no lang on <html>');
  if (!document.title) problems.push('no title');
  if (document.querySelectorAll('h1').length !== 1) problems.push(`${document.querySelectorAll('h1').length} h1 elements`);
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  for (const el of document.querySelectorAll('body *')) {
    const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!text || !visible(el)) continue;
    const style = getComputedStyle(el);
    const [a, b] = [lum(rgb(style.color)), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const large = parseFloat(style.fontSize) >= 24 || (parseFloat(style.fontSize) >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)}: "${el.textContent.trim().slice(0, 40)}"`);
  }
  return problems;
}

test('every control has a name and text passes AA contrast, on the event page, the map, the hold and the orders', T, async () => {
  const page = await newPage(browser);
  await page.goto(`${server.base}/`);
  await page.getByRole('button', { name: 'Join the line' }).waitFor();
  assert.deepEqual(await page.evaluate(basicAccessibility), [], 'event page');
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await mapReady(page);
  assert.deepEqual(await page.evaluate(basicAccessibility), [], 'seat map');
  await page.getByRole('radio', { name: 'Standing tickets' }).check();
  await page.getByRole('button', { name: 'Hold standing tickets' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  assert.deepEqual(await page.evaluate(basicAccessibility), [], 'hold');
  await page.getByRole('button', { name: 'Release these seats' }).click();
  await page.getByText('You released the seats.').waitFor();
  await page.getByRole('link', { name: 'My orders' }).click();
  await page.getByRole('heading', { name: 'My orders' }).waitFor();
  assert.deepEqual(await page.evaluate(basicAccessibility), [], 'orders');
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('at 375 px wide nothing overflows and a buyer can still hold seats', T, async () => {
  const page = await newPage(browser, { width: 375, height: 740 });
  await page.goto(`${server.base}/`);
  await page.getByRole('button', { name: 'Join the line' }).waitFor();
  await page.screenshot({ path: join(ARTIFACTS, 'event-375.png'), fullPage: true });
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await mapReady(page);
  await page.screenshot({ path: join(ARTIFACTS, 'map-375.png'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
  await page.getByRole('radio', { name: 'Best seats in a section' }).check();
  await page.getByRole('button', { name: 'Hold the best seats' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  const payBox = await page.getByRole('button', { name: /^Pay / }).boundingBox();
  assert.ok(payBox && payBox.x >= 0 && payBox.x + payBox.width <= 375, 'the pay button fits the screen');
  await page.screenshot({ path: join(ARTIFACTS, 'hold-375.png'), fullPage: true });
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});
