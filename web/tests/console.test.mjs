// The operator console in headless Chromium: the key typed once, an event made from a
// template (a refused form first), the sale opened and its seed revealed, the
// admission rate changed and the dashboard following it, a buyer's hold moving the
// holds chart, and the audit told in words. Every page is checked with axe-core and
// photographed at 375 and 1280 px; no page logs an error.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiClient, checkPage, newPage, startBrowser, startServer, unexpectedErrors } from './harness.mjs';

const overall = setTimeout(() => {
  console.error('browser tests: the overall deadline (3 min) passed');
  process.exit(1);
}, 180_000);
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

const T = { timeout: 120_000 };

test('the operator creates an event from a template, opens it, changes the admission rate and sees the dashboard move', T, async () => {
  const page = await newPage(browser);
  await page.goto(`${server.base}/console`);
  await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();
  await checkPage(page, 'console-signin');
  await page.getByLabel('Operator key').fill('not-the-key');
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.getByText('That key was not accepted.').waitFor();
  await page.getByLabel('Operator key').fill(server.operatorKey);
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.getByRole('heading', { name: 'Events' }).waitFor();
  await page.getByRole('link', { name: 'Demo stadium night' }).waitFor();
  assert.ok(!page.url().includes(server.operatorKey), 'the key is never in a URL');
  await checkPage(page, 'console-events');

  await page.getByRole('link', { name: 'New event' }).click();
  await page.getByRole('heading', { name: 'Create an event' }).waitFor();
  await page.getByRole('radio', { name: /^Club/ }).check();
  // Refused next to the field: no name.
  await page.getByRole('button', { name: 'Create the event' }).click();
  await page.getByText('Give the event a name.').waitFor();
  assert.equal(await page.getByLabel('Event name').getAttribute('aria-invalid'), 'true');
  // Refused by the server, shown next to its field: a rate over the limit.
  await page.getByLabel('Event name').fill('Browser club night');
  await page.getByLabel('Venue').fill('The Test Club');
  await page.getByLabel('Admission rate (buyers per second)').fill('2000000');
  await page.getByRole('button', { name: 'Create the event' }).click();
  await page.locator('#rate-error').filter({ hasText: 'admission_rate_per_s must be 1-1000000' }).waitFor();
  await checkPage(page, 'console-new');
  await page.getByLabel('Admission rate (buyers per second)').fill('20');
  await page.getByRole('button', { name: 'Create the event' }).click();

  await page.getByRole('heading', { name: 'Browser club night' }).waitFor();
  assert.match(page.url(), /#\/events\/\d+$/);
  const commitment = await page.locator('#commitment').textContent();
  assert.match(commitment, /^[0-9a-f]{64}$/);
  await page.getByRole('button', { name: 'Open the sale' }).click();
  await page.locator('.badge', { hasText: 'On sale' }).first().waitFor();
  await page.locator('#seed').filter({ hasText: /^[0-9a-f]{64}$/ }).waitFor({ timeout: 10_000 });

  // The club's own rate, then the operator's, on the dashboard.
  const rate = page.locator('#rate-figure');
  await page.locator('#rate-figure', { hasText: '20 / s' }).waitFor();
  await page.getByRole('radio', { name: 'Fixed rate' }).check();
  await page.getByLabel('Rate (buyers per second)').fill('37');
  await page.getByRole('button', { name: 'Apply admission' }).click();
  const changed = Date.now();
  await page.locator('#rate-figure', { hasText: '37 / s' }).waitFor({ timeout: 5_000 });
  assert.ok(Date.now() - changed < 3_000, `the dashboard showed the new rate after ${Date.now() - changed} ms`);
  await page.getByText('set by the operator').first().waitFor();
  assert.equal(await rate.textContent(), '37 / s');

  // A buyer's hold moves the holds and the sold figures.
  const eventId = Number(/#\/events\/(\d+)/.exec(page.url())[1]);
  const api = apiClient(server.base);
  const buyer = await api.admittedBuyer(eventId);
  const held = await api.call('POST', `/v1/events/${eventId}/holds`, { token: buyer.admission, body: { best_available: { section: 'FLOOR', quantity: 2 } } });
  assert.equal(held.status, 201, JSON.stringify(held.data));
  await page.getByText(/1 won and 0 lost in all/).waitFor({ timeout: 5_000 });
  await page.getByText('2 held, 798 free').waitFor({ timeout: 5_000 });
  const paid = await api.call('POST', `/v1/holds/${held.data.hold_id}/checkout`, { token: buyer.token, body: { payment_method: 'pm_card_visa' } });
  assert.equal(paid.status, 201, JSON.stringify(paid.data));
  await page.locator('.tile', { hasText: 'Orders by state' }).getByText('Confirmed').waitFor({ timeout: 5_000 });
  await page.getByText('2 of 800', { exact: true }).waitFor();
  await checkPage(page, 'console-event');

  await page.getByRole('link', { name: 'Audit' }).click();
  await page.getByRole('button', { name: 'Run the audit' }).click();
  await page.getByText(/^Clean\.$/).waitFor({ timeout: 15_000 });
  await page.getByText(/2 seats sold/).waitFor();
  await checkPage(page, 'console-audit');

  // A reload keeps the key (this tab's sessionStorage); forgetting it asks again.
  await page.reload();
  await page.getByRole('heading', { name: 'Audit' }).waitFor();
  await page.getByRole('button', { name: 'Forget the key' }).click();
  await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('boxoffice.operator_key')), null);
  // 403: the wrong key tried at sign-in; 422: the refused rate.
  assert.deepEqual(unexpectedErrors(page, [403, 422]), []);
  await page.closeAll();
});

test('the buyers\u2019 pages drop the operator key a console left in the tab', T, async () => {
  const page = await newPage(browser);
  await page.goto(`${server.base}/console`);
  await page.getByLabel('Operator key').fill(server.operatorKey);
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.getByRole('heading', { name: 'Events' }).waitFor();
  const kept = () => page.evaluate(() => sessionStorage.getItem('boxoffice.operator_key'));
  assert.equal(JSON.parse(await kept()), server.operatorKey);
  // A buyers' page may load a human check's script: the key is gone before it could.
  await page.goto(`${server.base}/#/events`);
  await page.waitForFunction(() => sessionStorage.getItem('boxoffice.operator_key') === null);
  await page.goto(`${server.base}/console`);
  await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a key the server stops taking sends the operator back to sign in and the dashboard stops asking; an unanswered check neither takes nor refuses a key', T, async () => {
  const page = await newPage(browser);
  await page.goto(`${server.base}/console`);
  // The check unanswered (the node busy): the key is neither taken nor called wrong.
  const busy = { error: 'overloaded', message: 'this node is handling as many requests as it can; retry shortly' };
  await page.route('**/v1/webhook-endpoints', (route) => route.fulfill({ status: 503, contentType: 'application/json', headers: { 'retry-after': '1' }, body: JSON.stringify(busy) }));
  await page.getByLabel('Operator key').fill(server.operatorKey);
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.getByText(/^The key could not be checked: .*Try again in a moment\.$/).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('boxoffice.operator_key')), null);
  await page.unroute('**/v1/webhook-endpoints');
  await page.getByLabel('Operator key').fill(server.operatorKey);
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.getByRole('link', { name: 'Demo stadium night' }).click();
  await page.getByRole('heading', { name: 'Orders by state' }).waitFor();

  // The server stops taking the key while the dashboard polls it.
  let asked = 0;
  const refused = { error: 'forbidden', message: 'the operator key is not accepted' };
  await page.route('**/v1/events/*/dashboard', (route) => {
    asked += 1;
    return route.fulfill({ status: 403, contentType: 'application/json', body: JSON.stringify(refused) });
  });
  await page.getByText('The server no longer accepts that key.').waitFor({ timeout: 10_000 });
  assert.equal(await page.evaluate(() => sessionStorage.getItem('boxoffice.operator_key')), null);
  await page.getByLabel('Operator key').fill('typed-meanwhile');
  const before = asked;
  // The dashboard polled every second; three seconds without a call say it stopped.
  await new Promise((ok) => setTimeout(ok, 3_000));
  assert.equal(asked, before, 'the dashboard went on asking with the refused key');
  assert.equal(await page.getByLabel('Operator key').inputValue(), 'typed-meanwhile', 'the sign-in form was drawn again over what was typed');
  assert.deepEqual(unexpectedErrors(page, [403, 503]), []);
  await page.closeAll();
});
