// An event's live dashboard: GET /v1/events/{id}/dashboard once a second, each figure
// as a number and a chart of the last two minutes.
import { api, isRefusal } from './api.js';
import { LineChart, Meter, bars } from './charts.js';
import { h, notice } from './ui.js';

export const REASONS = {
  configured: 'the event\u2019s configured rate',
  operator_override: 'set by the operator',
  hold_latency_high: 'narrowed: holds are slow',
  checkout_latency_high: 'narrowed: checkouts are slow',
  payment_errors_high: 'narrowed: the payment provider is failing',
  recovering: 'widening again: the system is healthy',
  sold_out: 'stopped: sold out',
  shopper_cap_reached: 'waiting: the cap on active shoppers is reached',
  few_seats_left: 'narrowed: no more buyers let in than the seats left allow',
};

const STATES = {
  confirmed: 'Confirmed',
  pending_payment: 'Awaiting payment',
  authorized: 'Authorized',
  committed: 'Committed',
  pending_capture: 'Capturing',
  declined: 'Declined',
  lost: 'Lost',
  voided: 'Voided',
  refunded: 'Refunded',
  voiding: 'Voiding',
  refunding: 'Refunding',
  cancelling: 'Cancelling',
  cancelled: 'Cancelled',
};

const ms = (v) => (v === null || v === undefined ? '\u2013' : `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`);
const n = (v) => Number(v ?? 0).toLocaleString();

function tile(title, figure, sub, chart, key) {
  return h('section', { class: 'tile', 'aria-label': title }, h('h3', {}, title), figure, sub, chart?.el, key);
}

function key(a, b) {
  return h('ul', { class: 'key', 'aria-hidden': 'true' }, h('li', { class: 'k0' }, a), b ? h('li', { class: 'k1' }, b) : null);
}

export class Dashboard {
  constructor({ eventId, token, onData, onRefused }) {
    this.eventId = eventId;
    this.token = token;
    this.onData = onData;
    // Called once, the polling stopped, when the server refuses the key.
    this.onRefused = onRefused;
    this.timer = null;
    this.charts = {
      queue: new LineChart({ label: 'Queue length and admitted over time' }),
      shoppers: new LineChart({ label: 'Active shoppers over time' }),
      rate: new LineChart({ label: 'Admission rate over time, buyers per second' }),
      holds: new LineChart({ label: 'Holds won and lost per second' }),
      sold: new LineChart({ label: 'Seats sold over time' }),
      holdLatency: new LineChart({ label: 'Hold latency p50 and p99 in ms' }),
      checkoutLatency: new LineChart({ label: 'Checkout latency p50 and p99 in ms' }),
      payments: new LineChart({ label: 'Payment errors over the health window' }),
    };
    this.meter = new Meter({ label: 'Sold against capacity' });
    this.f = {};
    for (const k of ['queue', 'admitted', 'shoppers', 'rate', 'reason', 'won', 'lost', 'sold', 'soldSub', 'holdLatency', 'checkoutLatency', 'payments', 'paymentsSub', 'updated']) {
      this.f[k] = h('p', { class: k === 'reason' || k.endsWith('Sub') || k === 'updated' || k === 'admitted' || k === 'lost' ? 'sub' : 'figure' });
    }
    this.orders = h('div');
    this.problem = h('div', { role: 'status' });
    const c = this.charts;
    const f = this.f;
    this.el = h(
      'section',
      { class: 'card dashboard', 'aria-labelledby': 'dash-title' },
      h('h2', { id: 'dash-title' }, 'Live dashboard'),
      f.updated,
      this.problem,
      h(
        'div',
        { class: 'tiles' },
        tile('Queue', f.queue, f.admitted, c.queue, key('in line', 'admitted')),
        tile('Active shoppers', f.shoppers, null, c.shoppers),
        tile('Admission rate', f.rate, f.reason, c.rate),
        tile('Holds per second', f.won, f.lost, c.holds, key('won', 'lost')),
        tile('Sold', f.sold, f.soldSub, c.sold, this.meter.el),
        tile('Hold latency', f.holdLatency, null, c.holdLatency, key('p50', 'p99')),
        tile('Checkout latency', f.checkoutLatency, null, c.checkoutLatency, key('p50', 'p99')),
        tile('Payment errors', f.payments, f.paymentsSub, c.payments),
        h('section', { class: 'tile', 'aria-label': 'Orders by state' }, h('h3', {}, 'Orders by state'), this.orders),
      ),
    );
  }

  start() {
    this.stopped = false;
    this.tick();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  async tick() {
    if (this.stopped) return;
    const began = Date.now();
    try {
      const { data } = await api(`/v1/events/${this.eventId}/dashboard`, { token: this.token });
      if (this.stopped) return;
      this.show(data);
      this.problem.replaceChildren();
      this.el.classList.remove('stale');
    } catch (e) {
      // A refused key is not tried again every second: the console asks for another.
      if (isRefusal(e)) {
        this.stop();
        this.onRefused?.(e);
        return;
      }
      this.problem.replaceChildren(notice('warn', `The figures could not be read: ${e.message} Trying again.`));
      this.el.classList.add('stale');
    }
    if (!this.stopped) this.timer = setTimeout(() => this.tick(), Math.max(200, 1000 - (Date.now() - began)));
  }

  show(d) {
    const { f, charts: c } = this;
    const seats = d.seats || { sold: 0, held: 0, free: d.capacity, capacity: d.capacity };
    f.queue.textContent = `${n(d.queue.queue_length)} in line`;
    f.admitted.textContent = `${n(d.admitted)} admitted${d.queue.sold_out ? ' \u00b7 the line was told: sold out' : ''}`;
    c.queue.push(d.queue.queue_length, d.admitted);
    f.shoppers.textContent = n(d.active_shoppers);
    c.shoppers.push(d.active_shoppers);
    f.rate.textContent = `${n(d.rate.rate_per_s)} / s`;
    f.rate.id = 'rate-figure';
    f.reason.replaceChildren(`${d.control.mode === 'adaptive' ? 'Adaptive' : 'Fixed'}: `, h('span', { class: 'reason' }, REASONS[d.rate.reason] || d.rate.reason));
    c.rate.push(d.rate.rate_per_s);
    f.won.textContent = `${d.holds.won_per_s.toFixed(1)} won / s`;
    f.lost.textContent = `${d.holds.lost_per_s.toFixed(1)} lost / s \u00b7 ${n(d.holds.won_total)} won and ${n(d.holds.lost_total)} lost in all`;
    c.holds.push(d.holds.won_per_s, d.holds.lost_per_s);
    f.sold.textContent = `${n(seats.sold)} of ${n(d.capacity)}`;
    f.soldSub.textContent = `${n(seats.held)} held, ${n(seats.free)} free`;
    this.meter.set(seats.sold, d.capacity);
    c.sold.push(seats.sold);
    f.holdLatency.textContent = `${ms(d.latency.hold_p50_ms)} / ${ms(d.latency.hold_p99_ms)}`;
    c.holdLatency.push(d.latency.hold_p50_ms, d.latency.hold_p99_ms);
    f.checkoutLatency.textContent = `${ms(d.latency.checkout_p50_ms)} / ${ms(d.latency.checkout_p99_ms)}`;
    c.checkoutLatency.push(d.latency.checkout_p50_ms, d.latency.checkout_p99_ms);
    f.payments.textContent = n(d.payments.errors);
    f.paymentsSub.textContent = d.payments.checkouts
      ? `of ${n(d.payments.checkouts)} checkouts (${(100 * (d.payments.error_rate || 0)).toFixed(1)}%) recently`
      : 'no checkouts recently';
    c.payments.push(d.payments.errors);
    const entries = Object.entries(d.orders).map(([s, k]) => [STATES[s] || s, k]);
    this.orders.replaceChildren(entries.length ? bars(entries, 'Orders by state') : h('p', { class: 'sub' }, 'No orders yet.'));
    f.updated.textContent = `Updated ${new Date(d.at).toLocaleTimeString()} \u00b7 latency and payment figures are this node's, over its recent window.`;
    this.onData?.(d);
  }
}
