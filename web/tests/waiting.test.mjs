// Events made for the purpose: one that asks for proof of work, solved in a Web Worker
// before the join; one sold out, which the line is told; one whose holds last 10 s;
// one that requires proof of possession, whose admission cannot leave the browser.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { apiClient, newPage, startBrowser, startServer, unexpectedErrors } from './harness.mjs';

const overall = setTimeout(() => {
  console.error('browser tests: the overall deadline (5 min) passed');
  process.exit(1);
}, 300_000);
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
async function theatre(name, seats, holdTtlS = 480, sale = {}) {
  const op = { token: server.operatorKey };
  const spec = {
    name,
    currency: 'EUR',
    tiers: [{ key: 'STALLS', name: 'Stalls', price: 2500 }],
    sections: [{ key: 'S', name: 'Stalls', tier: 'STALLS', rows: [{ label: 'A', seats }] }],
    sale: { max_tickets_per_buyer: 4, hold_ttl_s: holdTtlS, payment_grace_s: 120, admission_rate_per_s: 100, ...sale },
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

/** A proof of possession made outside the browser, with a key of the test's own. */
async function foreignProof(method, path) {
  const b64 = (bytes) => Buffer.from(bytes).toString('base64url');
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
  const header = { typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } };
  const claims = { htm: method, htu: path, iat: Math.floor(Date.now() / 1000), jti: crypto.randomUUID() };
  const signed = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(claims))}`;
  const sig = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, pair.privateKey, new TextEncoder().encode(signed));
  return `${signed}.${b64(new Uint8Array(sig))}`;
}

test('with proofs required the browser binds a key it cannot export, keeps it across a reload, and buys; its token is refused elsewhere', T, async () => {
  const id = await theatre('Bound night', 20, 480, { proof_of_possession: 'required' });
  const page = await newPage(browser);
  const proofs = new Map();
  let admission = null;
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    if (!['POST', 'DELETE'].includes(r.method()) || !path.startsWith('/v1/')) return;
    const h = r.headers();
    if (h.dpop) proofs.set(`${r.method()} ${path}`, h.dpop);
    if (path === `/v1/events/${id}/holds`) admission = h.authorization?.slice('Bearer '.length);
  });
  await page.goto(`${server.base}/#/events/${id}`);
  await page.getByRole('heading', { name: 'Bound night' }).waitFor();
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  assert.ok(proofs.has(`POST /v1/events/${id}/queue`), 'the join carried a proof');
  await page.waitForFunction(() => document.querySelector('canvas.seatmap-canvas')?.seatMap?.bits, null, { timeout: 30_000 });
  await page.getByRole('radio', { name: 'Best seats in a section' }).check();
  await page.getByRole('button', { name: 'Hold the best seats' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  const holdProof = proofs.get(`POST /v1/events/${id}/holds`);
  assert.ok(holdProof && admission, 'the hold carried a proof and the admission token');
  const header = JSON.parse(Buffer.from(holdProof.split('.')[0], 'base64url').toString());
  assert.equal(header.typ, 'dpop+jwt');
  // Ed25519 where the browser's WebCrypto has it (Chromium does), P-256 elsewhere.
  const hasEd25519 = await page.evaluate(() => crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign']).then(() => true, () => false));
  assert.deepEqual([header.alg, header.jwk.kty], hasEd25519 ? ['EdDSA', 'OKP'] : ['ES256', 'EC']);
  assert.equal(header.jwk.d, undefined, 'no private key leaves the browser');
  // The key is kept: after a reload the same key pays for the hold it made.
  await page.reload();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor({ timeout: 30_000 });
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.getByRole('heading', { name: 'You have your tickets' }).waitFor({ timeout: 30_000 });
  const payPath = [...proofs.keys()].find((k) => k.endsWith('/checkout'));
  assert.ok(payPath, 'the checkout carried a proof');
  const payHeader = JSON.parse(Buffer.from(proofs.get(payPath).split('.')[0], 'base64url').toString());
  assert.deepEqual(payHeader.jwk, header.jwk, 'one key before and after the reload');
  // The admission token copied out of the browser: refused without the browser's key.
  const holds = `/v1/events/${id}/holds`;
  const body = { best_available: { section: 'S', quantity: 1 } };
  const bare = await api.call('POST', holds, { token: admission, body });
  assert.deepEqual([bare.status, bare.data?.error], [401, 'proof_required']);
  const foreign = await api.call('POST', holds, { token: admission, body, headers: { DPoP: await foreignProof('POST', holds) } });
  assert.deepEqual([foreign.status, foreign.data?.error], [401, 'proof_key_mismatch']);
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});

test('a browser without Ed25519 in WebCrypto proves with a P-256 key and buys', T, async () => {
  const id = await theatre('Bound matinee', 10, 480, { proof_of_possession: 'required' });
  const page = await newPage(browser);
  // As a browser whose WebCrypto lacks the algorithm answers: NotSupportedError.
  await page.addInitScript(() => {
    const generate = crypto.subtle.generateKey.bind(crypto.subtle);
    crypto.subtle.generateKey = (algorithm, ...rest) =>
      algorithm?.name === 'Ed25519'
        ? Promise.reject(new DOMException('Algorithm: Unrecognized name', 'NotSupportedError'))
        : generate(algorithm, ...rest);
  });
  const algs = new Set();
  page.on('request', (r) => {
    const dpop = r.headers().dpop;
    if (dpop) algs.add(JSON.parse(Buffer.from(dpop.split('.')[0], 'base64url').toString()).alg);
  });
  await page.goto(`${server.base}/#/events/${id}`);
  await page.getByRole('heading', { name: 'Bound matinee' }).waitFor();
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await page.waitForFunction(() => document.querySelector('canvas.seatmap-canvas')?.seatMap?.bits, null, { timeout: 30_000 });
  await page.getByRole('radio', { name: 'Best seats in a section' }).check();
  await page.getByRole('button', { name: 'Hold the best seats' }).click();
  await page.getByRole('heading', { name: 'Your seats are held' }).waitFor();
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.getByRole('heading', { name: 'You have your tickets' }).waitFor({ timeout: 30_000 });
  assert.deepEqual([...algs], ['ES256'], 'every proof was ES256');
  assert.deepEqual(unexpectedErrors(page), []);
  await page.closeAll();
});
