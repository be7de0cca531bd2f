// What the browser tests need around the app: the boxoffice binary serving the demo on
// a free loopback port with a data directory of its own, headless Chromium (the
// system's /usr/bin/chromium, driven by playwright-core) with a fresh profile per run,
// and the checks every page gets (axe-core, screenshots at two widths).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const ARTIFACTS = process.env.BOXOFFICE_WEB_ARTIFACTS || resolve(here, '../test-results');

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function binary() {
  const bin = process.env.BOXOFFICE_BIN || resolve(process.env.CARGO_TARGET_DIR || resolve(here, '../../target'), 'debug/boxoffice');
  if (!existsSync(bin)) throw new Error(`no boxoffice binary at ${bin}: build it (cargo build -p boxoffice) or set BOXOFFICE_BIN`);
  return bin;
}

/** `boxoffice serve --demo` on 127.0.0.1, a free port; resolves once it listens. `env`
 *  adds settings (`BOXOFFICE_HTTP__MAX_IN_FLIGHT`, …) to the server's environment. */
export async function startServer({ timeoutMs = 60_000, env = {} } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'boxoffice-web-'));
  const child = spawn(binary(), ['serve', '--demo', '--listen', '127.0.0.1:0', '--data-dir', dataDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, BOXOFFICE_LOG: process.env.BOXOFFICE_LOG || 'warn', ...env },
  });
  let log = '';
  child.stderr.on('data', (d) => {
    log = (log + d).slice(-20_000);
  });
  const base = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`the server did not listen within ${timeoutMs} ms:\n${log}`)), timeoutMs);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok({ url: m[1], operatorKey: /operator key: (\S+)/.exec(out)?.[1] });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the server exited (${code}) before listening:\n${log}`));
    });
  });
  return {
    base: base.url,
    operatorKey: base.operatorKey,
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((ok) => {
          const t = setTimeout(() => {
            child.kill('SIGKILL');
            ok();
          }, 10_000);
          child.on('exit', () => {
            clearTimeout(t);
            ok();
          });
        });
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Headless Chromium; Playwright gives each launch a fresh --user-data-dir. */
export async function startBrowser() {
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(executablePath)) throw new Error(`no Chromium at ${executablePath} (apt-get install chromium)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath, args: CHROMIUM_FLAGS, headless: true, timeout: 60_000 });
}

/** A page in a fresh context (its own storage: a new buyer) that records console errors. */
export async function newPage(browser, { width = 1280, height = 900 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(m.text());
  });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.closeAll = () => context.close();
  return page;
}

/** Console errors other than refusals the test provoked on purpose (the browser logs
 *  every 4xx answer to fetch as an error). CSP violations are never excused. */
export function unexpectedErrors(page, allowedStatuses = [], allowedText = []) {
  return page.errors.filter((e) => !allowedStatuses.some((s) => e.includes(`status of ${s}`)) && !allowedText.some((t) => e.includes(t)));
}

/** Joins the line from the event page and waits for admission. */
export async function joinAndWaitForTurn(page, base) {
  await page.goto(`${base}/`);
  await page.getByRole('button', { name: 'Join the line' }).click();
  await page.getByRole('heading', { name: 'It\u2019s your turn' }).waitFor({ timeout: 30_000 });
  await mapReady(page);
}

/** Waits until the seat map is drawn and knows which seats are free. */
export async function mapReady(page) {
  await page.waitForFunction(() => document.querySelector('canvas.seatmap-canvas')?.seatMap?.bits, null, { timeout: 30_000 });
}

/** The API as another buyer or the operator uses it, from the test (no browser). */
export function apiClient(base) {
  const call = async (method, path, { token, body, headers = {} } = {}) => {
    const h = { ...headers, 'Idempotency-Key': crypto.randomUUID() + crypto.randomUUID() };
    if (token) h.Authorization = `Bearer ${token}`;
    if (body !== undefined) h['Content-Type'] = 'application/json';
    const res = await fetch(base + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
    const data = await res.json().catch(() => null);
    return { status: res.status, data };
  };
  return {
    call,
    /** A buyer admitted to `event`: {token, admission}. */
    async admittedBuyer(event, deadlineMs = 30_000) {
      const { data: buyer } = await call('POST', '/v1/buyers');
      const { data: joined } = await call('POST', `/v1/events/${event}/queue`, { token: buyer.token, body: {} });
      const until = Date.now() + deadlineMs;
      while (Date.now() < until) {
        const { data } = await call('GET', '/v1/queue/status', { token: joined.queue_ticket });
        if (data?.admission_token) return { token: buyer.token, admission: data.admission_token };
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error(`not admitted to event ${event} within ${deadlineMs} ms`);
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is now. The script is
 *  evaluated through the DevTools protocol, so the page's own policy stays as served. */
export async function a11yProblems(page) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(`${AXE_SOURCE}\n;0`);
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Screenshots of the page at a phone's width (375 px) and a desktop's (1280 px), saved
 *  as `<name>-375.png` and `<name>-1280.png`; the page is left at 1280 px. */
export async function screenshots(page, name) {
  for (const width of [375, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(100);
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
  }
}

/** Every page check at once: no serious accessibility problem, screenshots at both widths. */
export async function checkPage(page, name) {
  const problems = await a11yProblems(page);
  assert.deepEqual(problems, [], `${name}: ${JSON.stringify(problems, null, 1)}`);
  await screenshots(page, name);
}
