// Measures, in headless Chromium on this machine (docs/BENCHMARKS.md):
// - the time from asking for the demo stadium's seat map to its first frame showing
//   availability (51,000 units), median of RUNS fresh pages;
// - frame times while seats change through the availability stream at about 1,000 a
//   second (buyers holding and releasing four seats at a time over the API);
// - the bytes each page's files take as served: plain, gzip, brotli.
// Run: cargo build -p boxoffice && node web/bench/seatmap.mjs (BOXOFFICE_BIN to pick a
// binary, e.g. target/release/boxoffice). The churn needs a couple of hundred buyers
// holding at once from this one address; lift the join and hold limits for it:
//   BOXOFFICE_ENGINE__WAITING__JOIN_PER_IP__PER_S=0 BOXOFFICE_ENGINE__WAITING__JOIN_PER_IP__BURST=0
//   BOXOFFICE_ENGINE__WAITING__HOLD_PER_BUYER__PER_S=0 BOXOFFICE_ENGINE__WAITING__HOLD_PER_BUYER__BURST=0
//   BOXOFFICE_BUYERS__SIGNUP_PER_ADDRESS__PER_S=0 BOXOFFICE_BUYERS__SIGNUP_PER_ADDRESS__BURST=0
import { apiClient, joinAndWaitForTurn, newPage, startBrowser, startServer } from '../tests/harness.mjs';

const RUNS = Number(process.env.RUNS || 5);
const CHURN_S = Number(process.env.CHURN_S || 10);
const TARGET_PER_S = 1000;

const q = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

async function firstRender(browser, base) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const page = await newPage(browser);
    await joinAndWaitForTurn(page, base);
    times.push(await page.evaluate(() => performance.measure('m', 'seatmap-fetch', 'seatmap-first-render').duration));
    await page.closeAll();
  }
  return times;
}

async function churn(browser, base) {
  const page = await newPage(browser);
  await joinAndWaitForTurn(page, base);
  const api = apiClient(base);
  // The stream sends what changed once a second, so a seat held and released within
  // the same second never reaches the page: each hold is kept HOLD_MS before its
  // release, and enough buyers hold at once to make TARGET_PER_S changes a second
  // (8 per cycle). Run with the per-address and per-buyer limits lifted (see the top).
  const holdMs = Number(process.env.HOLD_MS || 1500);
  const workers = Number(process.env.WORKERS || Math.ceil((TARGET_PER_S / 8) * (holdMs / 1000 + 0.1)));
  const buyers = [];
  for (let i = 0; i < workers; i += 20) {
    const n = Math.min(20, workers - i);
    buyers.push(...(await Promise.all(Array.from({ length: n }, () => api.admittedBuyer(1, 120_000)))));
  }
  await page.evaluate(() => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    window.bench = { frames: [], seats: 0, drawMs: [] };
    const apply = map.applyDelta.bind(map);
    map.applyDelta = (free, taken) => {
      window.bench.seats += free.length + taken.length;
      apply(free, taken);
    };
    const draw = map.draw.bind(map);
    map.draw = () => {
      const t = performance.now();
      draw();
      window.bench.drawMs.push(performance.now() - t);
    };
    let last = performance.now();
    const loop = (t) => {
      window.bench.frames.push(t - last);
      last = t;
      if (!window.bench.stop) requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  });
  const until = Date.now() + CHURN_S * 1000;
  // Named seats drawn at random over the whole map (best-available would hold the same
  // front seats again and again, so the map as a whole would hardly change).
  const { data: doc } = await api.call('GET', '/v1/events/1/seatmap');
  const ids = doc.sections.flatMap((s) => s.rows.flatMap((r) => r.seats.map((seat) => seat.seat_id))).filter(Boolean);
  const pick = () => Array.from({ length: 4 }, () => ids[Math.floor(Math.random() * ids.length)]).filter((v, i, a) => a.indexOf(v) === i);
  let changes = 0;
  // Each cycle is a hold of 4 seats and its release: 8 seat changes. Paced to the target.
  const perWorkerCycleMs = (workers * 8 * 1000) / TARGET_PER_S;
  await Promise.all(
    buyers.map(async (b) => {
      while (Date.now() < until) {
        const started = Date.now();
        const seatIds = pick();
        const held = await api.call('POST', '/v1/events/1/holds', { token: b.admission, body: { seat_ids: seatIds } });
        if (held.status === 201) {
          changes += seatIds.length;
          await new Promise((r) => setTimeout(r, holdMs));
          const gone = await api.call('DELETE', `/v1/holds/${held.data.hold_id}`, { token: b.token });
          if (gone.status < 300) changes += seatIds.length;
        }
        const wait = perWorkerCycleMs - (Date.now() - started);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    }),
  );
  const result = await page.evaluate(() => {
    window.bench.stop = true;
    return window.bench;
  });
  await page.closeAll();
  return { ...result, sent: changes };
}

/** The page's own cost of 1,000 seat changes a second, whatever the server can send:
 *  deltas of 100 seats handed to the map ten times a second, as the stream hands them. */
async function synthetic(browser, base) {
  const page = await newPage(browser);
  await joinAndWaitForTurn(page, base);
  const r = await page.evaluate(async (seconds) => {
    const map = document.querySelector('canvas.seatmap-canvas').seatMap;
    const n = map.byId.size;
    const frames = [];
    const work = [];
    let last = performance.now();
    let stop = false;
    const loop = (t) => {
      frames.push(t - last);
      last = t;
      if (!stop) requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
    const draw = map.draw.bind(map);
    map.draw = () => {
      const t = performance.now();
      draw();
      work.push(performance.now() - t);
    };
    let seats = 0;
    const timer = setInterval(() => {
      const free = [];
      const taken = [];
      for (let i = 0; i < 100; i++) (i % 2 ? free : taken).push(Math.floor(Math.random() * n));
      const t = performance.now();
      map.applyDelta(free, taken);
      work.push(performance.now() - t);
      seats += 100;
    }, 100);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    clearInterval(timer);
    stop = true;
    return { frames: frames.slice(5), work, seats };
  }, CHURN_S);
  await page.closeAll();
  return r;
}

async function sizes(base) {
  const out = {};
  for (const [name, path] of [['buyer app (/)', '/'], ['console (/console)', '/console']]) {
    const html = await (await fetch(base + path)).text();
    const map = JSON.parse(/<script type="importmap">(.*?)<\/script>/s.exec(html)[1]).imports;
    const files = new Set([...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]));
    // Follow the modules' own imports through the import map.
    const queue = [...files].filter((f) => f.endsWith('.js'));
    while (queue.length) {
      const file = queue.pop();
      const text = await (await fetch(base + file)).text();
      for (const m of text.matchAll(/(?:from|import|new Worker\(new URL\()\s*['"]\.\/([\w.-]+\.js)['"]/g)) {
        const hashed = map[`/assets/${m[1]}`];
        if (hashed && !files.has(hashed)) {
          files.add(hashed);
          queue.push(hashed);
        }
      }
    }
    const total = { plain: 0, gzip: 0, br: 0, js_gzip: 0 };
    for (const f of [path, ...files]) {
      for (const enc of ['identity', 'gzip', 'br']) {
        // fetch() decodes bodies itself: the size on the wire is the Content-Length.
        const res = await fetch(base + f, { headers: { 'Accept-Encoding': enc } });
        const n = Number(res.headers.get('content-length'));
        await res.arrayBuffer();
        const key = enc === 'identity' ? 'plain' : enc;
        total[key] += n;
        if (enc === 'gzip' && f.endsWith('.js')) total.js_gzip += n;
      }
    }
    out[name] = { files: files.size + 1, ...total };
  }
  return out;
}

const server = await startServer();
const browser = await startBrowser();
try {
  const renders = await firstRender(browser, server.base);
  console.log(`seat map, first render with availability (${RUNS} pages): median ${q(renders, 0.5).toFixed(0)} ms, min ${Math.min(...renders).toFixed(0)}, max ${Math.max(...renders).toFixed(0)}`);
  const c = await churn(browser, server.base);
  const frames = c.frames.slice(5);
  console.log(
    `churn ${CHURN_S} s: ${c.sent} seat changes sent (${(c.sent / CHURN_S).toFixed(0)}/s), ${c.seats} applied by the page (${(c.seats / CHURN_S).toFixed(0)}/s); ` +
      `frame interval p50 ${q(frames, 0.5).toFixed(1)} ms, p95 ${q(frames, 0.95).toFixed(1)}, p99 ${q(frames, 0.99).toFixed(1)}, max ${Math.max(...frames).toFixed(1)} over ${frames.length} frames; ` +
      `draw() p50 ${q(c.drawMs, 0.5).toFixed(2)} ms, p99 ${q(c.drawMs, 0.99).toFixed(2)} over ${c.drawMs.length} draws`,
  );
  const y = await synthetic(browser, server.base);
  console.log(
    `synthetic ${CHURN_S} s: ${y.seats} seat changes (${(y.seats / CHURN_S).toFixed(0)}/s) applied in deltas of 100; ` +
      `frame interval p50 ${q(y.frames, 0.5).toFixed(1)} ms, p95 ${q(y.frames, 0.95).toFixed(1)}, p99 ${q(y.frames, 0.99).toFixed(1)}, max ${Math.max(...y.frames).toFixed(1)} over ${y.frames.length} frames; ` +
      `applyDelta+draw p50 ${q(y.work, 0.5).toFixed(2)} ms, p99 ${q(y.work, 0.99).toFixed(2)}`,
  );
  const s = await sizes(server.base);
  for (const [page, v] of Object.entries(s)) {
    console.log(`${page}: ${v.files} files, ${v.plain} B plain, ${v.gzip} B gzip (JS ${v.js_gzip} B), ${v.br} B brotli`);
  }
} finally {
  await browser.close();
  await server.stop();
}
