// The seat map: the venue drawn on a canvas from /seatmap, kept live from the
// availability stream. Each section is painted once into a canvas of its own, one
// 10-unit cell per seat; a frame only composites those (a few dozen drawImage calls,
// whatever the zoom), and a changed seat repaints its one cell. So a 51,000-unit
// stadium pans and zooms at full frame rate and a burst of changes costs little.
import { announce, h, money } from './ui.js';

const CELL = 10;
const SEAT = 8;
const GAP = 40;
const LABEL = 22;
const TIER_COLORS = ['#1f5fa8', '#2e7d32', '#7b1fa2', '#b45309', '#00796b', '#ad1457'];
const TAKEN = '#d4d4d4';
const UNKNOWN = '#ececec';
const LISTED = '#ffd60a';

export class SeatMap {
  /**
   * doc: the /seatmap document; tiers: the event's price tiers; onChange(selection) when
   * the picked seats change; onPickGa(section) when a standing area is clicked;
   * onLost(seatIds) when picked seats were taken by someone else meanwhile;
   * onPickListing(listing) when a seat offered on the exchange is picked.
   */
  constructor(doc, { currency, maxPick, onChange, onPickGa, onLost, onPickListing }) {
    this.currency = currency;
    this.onPickListing = onPickListing;
    /** Seats on the exchange: seat index -> listing. */
    this.listed = new Map();
    this.maxPick = maxPick;
    this.onChange = onChange;
    this.onPickGa = onPickGa;
    this.onLost = onLost;
    this.tiers = new Map(doc.tiers.map((t, i) => [t.key, { ...t, color: TIER_COLORS[i % TIER_COLORS.length], n: i }]));
    this.selected = new Set();
    this.bits = null;
    this.view = { s: 1, tx: 0, ty: 0 };
    this.cursor = null;
    this.layout(doc);
    this.buildDom();
  }

  layout(doc) {
    let count = 0;
    for (const s of doc.sections) for (const r of s.rows) count += r.seats.length;
    this.ids = new Array(count);
    this.secOf = new Int32Array(count);
    this.rowOf = new Int32Array(count);
    this.colOf = new Int32Array(count);
    this.tierOf = new Uint8Array(count);
    this.byId = new Map();
    const tierList = [...this.tiers.values()];
    this.sections = doc.sections.map((s, si) => {
      const ga = s.kind === 'general_admission';
      const grid = s.rows.map((r, ri) =>
        r.seats.map((seat, ci) => {
          const i = seat.index;
          this.ids[i] = seat.seat_id;
          this.secOf[i] = si;
          this.rowOf[i] = ri;
          this.colOf[i] = ci;
          this.tierOf[i] = this.tiers.get(seat.tier)?.n ?? 0;
          if (!ga) this.byId.set(seat.seat_id, i);
          return i;
        }),
      );
      const all = grid.flat();
      const width = ga ? 360 : Math.max(1, ...grid.map((r) => r.length)) * CELL;
      const height = ga ? 140 : Math.max(1, grid.length) * CELL;
      const tier = tierList[this.tierOf[all[0]] ?? 0];
      const prices = [...new Set(all.map((i) => tierList[this.tierOf[i]]?.price ?? 0))];
      const [first, last] = [Math.min(...all), Math.max(...all)];
      return { key: s.key, name: s.name, ga, grid, rows: s.rows.map((r) => r.label), first, last, w: width, h: height, x: 0, y: 0, free: 0, tier, low: Math.min(...prices), high: Math.max(...prices), canvas: null };
    });
    // Flow layout: rows of blocks about as wide as the whole is tall.
    const area = this.sections.reduce((a, s) => a + (s.w + GAP) * (s.h + GAP + LABEL), 0);
    const target = Math.max(Math.sqrt(area) * 1.5, ...this.sections.map((s) => s.w));
    let x = 0;
    let y = 0;
    let rowH = 0;
    for (const s of this.sections) {
      if (x > 0 && x + s.w > target) {
        x = 0;
        y += rowH + GAP;
        rowH = 0;
      }
      s.x = x;
      s.y = y + LABEL;
      x += s.w + GAP;
      rowH = Math.max(rowH, s.h + LABEL);
    }
    this.world = { w: Math.max(...this.sections.map((s) => s.x + s.w)), h: y + rowH };
  }

  buildDom() {
    this.canvas = h('canvas', {
      class: 'seatmap-canvas',
      tabindex: '0',
      'aria-label': 'Seat map. Arrow keys move between seats, Enter picks or unpicks a seat, Page Up and Page Down change section, plus and minus zoom.',
      'aria-describedby': 'seatmap-help',
    });
    const btn = (label, text, fn) => h('button', { type: 'button', class: 'map-btn', 'aria-label': label, onclick: fn }, text);
    const legend = h(
      'ul',
      { class: 'legend', 'aria-label': 'Legend' },
      [...this.tiers.values()].map((t) => h('li', {}, h('span', { class: `swatch tier-${t.n % TIER_COLORS.length}`, 'aria-hidden': 'true' }), `${t.name} ${money(t.price, this.currency)}`)),
      h('li', {}, h('span', { class: 'swatch swatch-taken', 'aria-hidden': 'true' }), 'Taken'),
      h('li', {}, h('span', { class: 'swatch swatch-picked', 'aria-hidden': 'true' }), 'Your pick'),
      h('li', {}, h('span', { class: 'swatch swatch-listed', 'aria-hidden': 'true' }), 'On the exchange (price shown)'),
    );
    this.el = h(
      'div',
      { class: 'seatmap' },
      h('div', { class: 'map-tools' }, btn('Zoom in', '+', () => this.zoomBy(1.5)), btn('Zoom out', '\u2212', () => this.zoomBy(1 / 1.5)), btn('Fit: show the whole venue', 'Fit', () => this.fit())),
      this.canvas,
      h('p', { id: 'seatmap-help', class: 'hint' }, 'Drag to move, scroll or use the buttons to zoom, click a seat to pick it. Standing areas: click them, then choose how many.'),
      legend,
    );
    // Tools and tests reach the map through its canvas (pointOf, freeSeats).
    this.canvas.seatMap = this;
    this.bind();
    new ResizeObserver(() => this.resize()).observe(this.canvas);
    this.paintAll();
  }

  // --- painting -------------------------------------------------------------------

  paintAll() {
    for (const s of this.sections) {
      if (s.ga) {
        s.free = this.countFree(s);
        continue;
      }
      s.canvas ||= Object.assign(document.createElement('canvas'), { width: s.w, height: s.h });
      const g = s.canvas.getContext('2d');
      g.clearRect(0, 0, s.w, s.h);
      for (const row of s.grid) for (const i of row) this.paintSeat(g, i);
    }
    this.requestDraw();
  }

  paintSeat(g, i) {
    const free = this.isFree(i);
    g.fillStyle = free === null ? UNKNOWN : free ? TIER_COLORS[this.tierOf[i] % TIER_COLORS.length] : TAKEN;
    g.clearRect(this.colOf[i] * CELL, this.rowOf[i] * CELL, CELL, CELL);
    g.fillRect(this.colOf[i] * CELL + 1, this.rowOf[i] * CELL + 1, SEAT, SEAT);
  }

  countFree(s) {
    if (!this.bits) return null;
    let n = 0;
    for (let i = s.first; i <= s.last; i++) if (this.isFree(i)) n++;
    return n;
  }

  isFree(i) {
    if (!this.bits) return null;
    return (this.bits[i >> 3] & (0x80 >> (i & 7))) !== 0;
  }

  requestDraw() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      this.draw();
    });
  }

  draw() {
    // For the benchmark (docs/BENCHMARKS.md): the first frame that shows availability.
    if (this.bits && !this.shown) {
      this.shown = true;
      performance.mark('seatmap-first-render');
    }
    const c = this.canvas;
    const g = c.getContext('2d');
    const dpr = window.devicePixelRatio || 1;
    const { s, tx, ty } = this.view;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, c.width, c.height);
    g.setTransform(dpr * s, 0, 0, dpr * s, dpr * tx, dpr * ty);
    g.imageSmoothingEnabled = false;
    g.font = '600 15px system-ui, sans-serif';
    for (const sec of this.sections) {
      g.fillStyle = '#1a1a1a';
      g.fillText(sec.ga ? `${sec.name} (standing)` : sec.name, sec.x, sec.y - 7);
      if (sec.ga) {
        g.fillStyle = sec.free === 0 ? TAKEN : TIER_COLORS[sec.tier?.n % TIER_COLORS.length || 0];
        g.fillRect(sec.x, sec.y, sec.w, sec.h);
        g.fillStyle = sec.free === 0 ? '#1a1a1a' : '#ffffff';
        g.font = '600 22px system-ui, sans-serif';
        g.fillText(sec.free === null ? 'Standing' : `${sec.free.toLocaleString()} left`, sec.x + 16, sec.y + sec.h / 2 + 8);
        g.font = '600 15px system-ui, sans-serif';
      } else {
        g.drawImage(sec.canvas, sec.x, sec.y);
      }
    }
    this.drawListings(g, s);
    g.lineWidth = 2;
    for (const i of this.selected) {
      const [x, y] = this.cellOf(i);
      g.fillStyle = '#111111';
      g.fillRect(x, y, CELL, CELL);
      g.fillStyle = '#ffffff';
      g.fillRect(x + 3, y + 3, CELL - 6, CELL - 6);
    }
    if (this.cursor !== null && document.activeElement === c) {
      const [x, y] = this.cellOf(this.cursor);
      g.strokeStyle = '#c00000';
      g.strokeRect(x - 2, y - 2, CELL + 4, CELL + 4);
    }
  }

  /** Seats on the exchange: a yellow seat with a dark ring, and its price beside it in
   *  a label of constant size on screen. */
  drawListings(g, scale) {
    if (!this.listed.size) return;
    const px = 1 / scale;
    g.font = `600 ${12 * px}px system-ui, sans-serif`;
    g.textBaseline = 'middle';
    for (const [i, l] of this.listed) {
      const [x, y] = this.cellOf(i);
      g.fillStyle = '#1a1a1a';
      g.fillRect(x, y, CELL, CELL);
      g.fillStyle = LISTED;
      g.fillRect(x + 1.5, y + 1.5, CELL - 3, CELL - 3);
      const text = money(l.price, this.currency);
      const w = g.measureText(text).width + 8 * px;
      const [lx, ly] = [x + CELL + 2 * px, y + CELL / 2 - 9 * px];
      g.fillStyle = '#1a1a1a';
      g.fillRect(lx, ly, w, 18 * px);
      g.fillStyle = '#ffffff';
      g.fillText(text, lx + 4 * px, y + CELL / 2);
    }
    g.textBaseline = 'alphabetic';
  }

  /** The exchange's open listings of this event ([{listing_id, seat_index, price, seat_id}]). */
  setListings(listings) {
    this.listed = new Map(listings.filter((l) => Number.isInteger(l.seat_index) && l.seat_index >= 0 && l.seat_index < this.ids.length).map((l) => [l.seat_index, l]));
    this.requestDraw();
  }

  cellOf(i) {
    const sec = this.sections[this.secOf[i]];
    return [sec.x + this.colOf[i] * CELL, sec.y + this.rowOf[i] * CELL];
  }

  // --- availability ---------------------------------------------------------------

  /** The whole bitmap (base64, one bit per seat index, most significant first, 1 = free). */
  setSnapshot(b64) {
    const raw = atob(b64);
    const bits = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bits[i] = raw.charCodeAt(i);
    const lost = [...this.selected].filter((i) => !((bits[i >> 3] & (0x80 >> (i & 7))) !== 0));
    this.bits = bits;
    this.paintAll();
    this.dropLost(lost);
  }

  /** Seats that became free or were taken since the last snapshot or delta. */
  applyDelta(free, taken) {
    if (!this.bits) return;
    const touched = new Set();
    for (const i of free) {
      this.bits[i >> 3] |= 0x80 >> (i & 7);
      touched.add(this.secOf[i]);
    }
    for (const i of taken) {
      this.bits[i >> 3] &= ~(0x80 >> (i & 7));
      touched.add(this.secOf[i]);
    }
    for (const i of [...free, ...taken]) {
      const sec = this.sections[this.secOf[i]];
      if (!sec.ga) this.paintSeat(sec.canvas.getContext('2d'), i);
    }
    for (const si of touched) if (this.sections[si].ga) this.sections[si].free = this.countFree(this.sections[si]);
    this.dropLost(taken.filter((i) => this.selected.has(i)));
    this.requestDraw();
  }

  dropLost(lost) {
    if (!lost.length) return;
    for (const i of lost) this.selected.delete(i);
    this.onLost(lost.map((i) => this.ids[i]));
    this.changed();
  }

  // --- picking --------------------------------------------------------------------

  toggle(i) {
    const sec = this.sections[this.secOf[i]];
    if (sec.ga) {
      this.onPickGa(sec);
      return;
    }
    const label = this.describe(i);
    const listing = this.listed.get(i);
    if (listing && !this.selected.has(i) && this.isFree(i) !== true) {
      this.onPickListing?.(listing);
      return;
    }
    if (this.selected.has(i)) {
      this.selected.delete(i);
      announce(`Removed ${label}. ${this.selected.size} picked.`);
    } else if (this.isFree(i) === false) {
      announce(`${label} is taken.`);
      return;
    } else if (this.selected.size >= this.maxPick) {
      announce(`You can pick at most ${this.maxPick} seats.`);
      return;
    } else {
      this.selected.add(i);
      announce(`Picked ${label}. ${this.selected.size} picked.`);
    }
    this.changed();
  }

  describe(i) {
    const sec = this.sections[this.secOf[i]];
    const tier = [...this.tiers.values()][this.tierOf[i]];
    const listing = this.listed.get(i);
    const state = listing && this.isFree(i) !== true ? `, on the exchange for ${money(listing.price, this.currency)}` : this.isFree(i) === null ? '' : this.isFree(i) ? ', free' : ', taken';
    return `${sec.name}, row ${sec.rows[this.rowOf[i]]}, seat ${this.ids[i]}, ${tier ? money(tier.price, this.currency) : ''}${state}`;
  }

  changed() {
    this.onChange(this.selection());
    this.requestDraw();
  }

  /** The picked seats: [{index, seat_id, tier, price}]. */
  selection() {
    const tiers = [...this.tiers.values()];
    return [...this.selected].map((i) => ({ index: i, seat_id: this.ids[i], tier: tiers[this.tierOf[i]], price: tiers[this.tierOf[i]]?.price ?? 0 }));
  }

  clear() {
    this.selected.clear();
    this.changed();
  }

  /** Where a seat is on the page, in CSS pixels (for tests and tools). */
  pointOf(seatId) {
    const i = this.byId.get(seatId);
    if (i === undefined) return null;
    const [x, y] = this.cellOf(i);
    const r = this.canvas.getBoundingClientRect();
    const { s, tx, ty } = this.view;
    return { x: r.left + (x + CELL / 2) * s + tx, y: r.top + (y + CELL / 2) * s + ty };
  }

  /** The first free seats of a seated section, by row (for tests and tools). */
  freeSeats(sectionKey, n) {
    const sec = this.sections.find((s) => s.key === sectionKey);
    const out = [];
    for (const row of sec?.grid ?? []) for (const i of row) if (this.isFree(i) && out.length < n) out.push(this.ids[i]);
    return out;
  }

  // --- view -----------------------------------------------------------------------

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const r = this.canvas.getBoundingClientRect();
    this.canvas.width = Math.max(1, Math.round(r.width * dpr));
    this.canvas.height = Math.max(1, Math.round(r.height * dpr));
    if (!this.fitted) {
      this.fitted = true;
      this.fit();
    }
    this.requestDraw();
  }

  fit() {
    const r = this.canvas.getBoundingClientRect();
    const s = Math.min(r.width / (this.world.w + 20), r.height / (this.world.h + 20)) || 1;
    this.view = { s, tx: (r.width - this.world.w * s) / 2, ty: (r.height - this.world.h * s) / 2 };
    this.requestDraw();
  }

  zoomBy(f, px, py) {
    const r = this.canvas.getBoundingClientRect();
    const cx = px ?? r.width / 2;
    const cy = py ?? r.height / 2;
    const { s, tx, ty } = this.view;
    const ns = Math.min(Math.max(s * f, 0.05), 8);
    this.view = { s: ns, tx: cx - ((cx - tx) * ns) / s, ty: cy - ((cy - ty) * ns) / s };
    this.requestDraw();
  }

  hit(px, py) {
    const { s, tx, ty } = this.view;
    const wx = (px - tx) / s;
    const wy = (py - ty) / s;
    for (const sec of this.sections) {
      if (wx < sec.x || wy < sec.y || wx >= sec.x + sec.w || wy >= sec.y + sec.h) continue;
      if (sec.ga) return sec.first;
      const row = sec.grid[Math.floor((wy - sec.y) / CELL)];
      const i = row?.[Math.floor((wx - sec.x) / CELL)];
      return i ?? null;
    }
    return null;
  }

  bind() {
    const c = this.canvas;
    const pointers = new Map();
    let drag = null;
    c.addEventListener('pointerdown', (e) => {
      c.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, { x: e.offsetX, y: e.offsetY });
      drag = { x: e.offsetX, y: e.offsetY, moved: false, pinch: pointers.size === 2 ? this.spread(pointers) : 0 };
    });
    c.addEventListener('pointermove', (e) => {
      if (!drag || !pointers.has(e.pointerId)) return;
      pointers.set(e.pointerId, { x: e.offsetX, y: e.offsetY });
      if (pointers.size === 2 && drag.pinch) {
        const d = this.spread(pointers);
        const [a, b] = [...pointers.values()];
        this.zoomBy(d / drag.pinch, (a.x + b.x) / 2, (a.y + b.y) / 2);
        drag.pinch = d;
        drag.moved = true;
        return;
      }
      const dx = e.offsetX - drag.x;
      const dy = e.offsetY - drag.y;
      if (!drag.moved && Math.hypot(dx, dy) < 5) return;
      drag.moved = true;
      this.view.tx += dx;
      this.view.ty += dy;
      drag.x = e.offsetX;
      drag.y = e.offsetY;
      this.requestDraw();
    });
    const end = (e) => {
      pointers.delete(e.pointerId);
      if (drag && !drag.moved && e.type === 'pointerup') {
        const i = this.hit(e.offsetX, e.offsetY);
        if (i !== null) {
          this.cursor = i;
          this.toggle(i);
        }
      }
      if (pointers.size === 0) drag = null;
    };
    c.addEventListener('pointerup', end);
    c.addEventListener('pointercancel', end);
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      this.zoomBy(Math.exp(-e.deltaY / 400), e.offsetX, e.offsetY);
    }, { passive: false });
    c.addEventListener('keydown', (e) => this.key(e));
    c.addEventListener('focus', () => {
      if (this.cursor === null) this.cursor = this.firstSeat();
      if (this.cursor !== null) announce(this.describe(this.cursor));
      this.requestDraw();
    });
    c.addEventListener('blur', () => this.requestDraw());
  }

  spread(pointers) {
    const [a, b] = [...pointers.values()];
    return Math.hypot(a.x - b.x, a.y - b.y) || 1;
  }

  firstSeat() {
    for (const sec of this.sections) if (!sec.ga) for (const row of sec.grid) for (const i of row) if (this.isFree(i) !== false) return i;
    return this.sections[0]?.first ?? null;
  }

  key(e) {
    const i = this.cursor;
    if (i === null) return;
    const si = this.secOf[i];
    const sec = this.sections[si];
    let next = i;
    const row = this.rowOf[i];
    const col = this.colOf[i];
    const at = (r, cidx) => {
      const rr = sec.grid[Math.max(0, Math.min(sec.grid.length - 1, r))];
      return rr[Math.max(0, Math.min(rr.length - 1, cidx))];
    };
    switch (e.key) {
      case 'ArrowLeft': next = sec.ga ? i : at(row, col - 1); break;
      case 'ArrowRight': next = sec.ga ? i : at(row, col + 1); break;
      case 'ArrowUp': next = sec.ga ? i : at(row - 1, col); break;
      case 'ArrowDown': next = sec.ga ? i : at(row + 1, col); break;
      case 'PageDown': next = this.sections[(si + 1) % this.sections.length].first; break;
      case 'PageUp': next = this.sections[(si - 1 + this.sections.length) % this.sections.length].first; break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.toggle(i);
        return;
      case '+':
      case '=': this.zoomBy(1.5); e.preventDefault(); return;
      case '-': this.zoomBy(1 / 1.5); e.preventDefault(); return;
      case '0': this.fit(); e.preventDefault(); return;
      default: return;
    }
    e.preventDefault();
    this.cursor = next;
    this.reveal(next);
    announce(this.describe(next));
    this.requestDraw();
  }

  /** Pans (and zooms in, from the whole-venue view) so a seat is on screen. */
  reveal(i) {
    const r = this.canvas.getBoundingClientRect();
    if (this.view.s < 1) this.zoomBy(1.2 / this.view.s);
    const [x, y] = this.cellOf(i);
    const { s, tx, ty } = this.view;
    const sx = x * s + tx;
    const sy = y * s + ty;
    if (sx < 20 || sy < 20 || sx > r.width - 20 || sy > r.height - 20) {
      this.view.tx = r.width / 2 - x * s;
      this.view.ty = r.height / 2 - y * s;
    }
  }
}
