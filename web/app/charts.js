// Small charts drawn as inline SVG by our own code: a line chart of the last minutes
// of one or two series, a meter, and a list of labelled bars. Colours come from
// console.css classes (no inline style, so the strict policy holds).

const NS = 'http://www.w3.org/2000/svg';
const W = 300;
const H = 64;

function svg(tag, attrs = {}) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** A rounded-up scale top: 1, 2, 5 × 10^n. */
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

/** A line chart of up to two series over the last `points` samples. */
export class LineChart {
  constructor({ label, points = 120 }) {
    this.label = label;
    this.points = points;
    this.series = [[], []];
    this.el = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label });
    this.title = svg('title');
    this.el.append(this.title);
    for (const y of [0.25, 0.5, 0.75]) this.el.append(svg('line', { class: 'grid', x1: 0, x2: W, y1: H * y, y2: H * y }));
    this.lines = [svg('polyline', { class: 's0', points: '' }), svg('polyline', { class: 's1', points: '' })];
    this.el.append(...this.lines);
  }

  /** Adds one sample per series (null: no value) and redraws. */
  push(...values) {
    values.forEach((v, i) => {
      const s = this.series[i];
      s.push(v ?? null);
      if (s.length > this.points) s.shift();
    });
    this.draw();
  }

  draw() {
    const all = this.series.flat().filter((v) => v !== null);
    const top = niceMax(Math.max(0, ...all));
    this.series.forEach((s, i) => {
      const step = W / Math.max(1, this.points - 1);
      const x0 = W - (s.length - 1) * step;
      const pts = [];
      s.forEach((v, j) => {
        if (v !== null) pts.push(`${(x0 + j * step).toFixed(1)},${(H - 2 - (v / top) * (H - 4)).toFixed(1)}`);
      });
      this.lines[i].setAttribute('points', pts.join(' '));
    });
    const last = this.series.map((s) => s[s.length - 1]).filter((v) => v !== undefined && v !== null);
    this.title.textContent = `${this.label}: latest ${last.map((v) => round(v)).join(' and ')}, scale up to ${top}`;
  }
}

/** A horizontal meter: `value` of `max`. */
export class Meter {
  constructor({ label }) {
    this.label = label;
    this.el = svg('svg', { class: 'chart', viewBox: `0 0 ${W} 16`, preserveAspectRatio: 'none', role: 'img', 'aria-label': label });
    this.title = svg('title');
    this.bg = svg('rect', { class: 'bar-bg', x: 0, y: 0, width: W, height: 16 });
    this.bar = svg('rect', { class: 'bar', x: 0, y: 0, width: 0, height: 16 });
    this.el.append(this.title, this.bg, this.bar);
    this.el.classList.add('meter');
  }

  set(value, max) {
    const share = max > 0 ? Math.min(1, value / max) : 0;
    this.bar.setAttribute('width', (share * W).toFixed(1));
    this.title.textContent = `${this.label}: ${value.toLocaleString()} of ${max.toLocaleString()} (${(share * 100).toFixed(1)}%)`;
  }
}

/** A list of labelled bars, each with its number, scaled to the largest. */
export function bars(entries, label) {
  const top = Math.max(1, ...entries.map(([, n]) => n));
  const list = document.createElement('ul');
  list.className = 'bars';
  list.setAttribute('aria-label', label);
  for (const [name, n] of entries) {
    const li = document.createElement('li');
    const name_ = document.createElement('span');
    name_.textContent = name;
    const chart = svg('svg', { viewBox: `0 0 100 12`, preserveAspectRatio: 'none', 'aria-hidden': 'true' });
    chart.append(svg('rect', { class: 'bar', x: 0, y: 0, height: 12, width: ((n / top) * 100).toFixed(1) }));
    const num = document.createElement('span');
    num.className = 'n';
    num.textContent = n.toLocaleString();
    li.append(name_, chart, num);
    list.append(li);
  }
  return list;
}

function round(v) {
  return Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 10) / 10;
}
