// The event's page header: name, venue, price tiers, the sale's status, the time to
// the announced opening, and what that means for someone arriving now.
import { serverNow } from './api.js';
import { duration, h, money } from './ui.js';

const STATUS = {
  scheduled: ['Not on sale yet', 'The sale has not opened. Join the line now: when it opens, everyone who joined before is placed in a fair random order, ahead of later arrivals.'],
  open: ['On sale now', 'Join the line. When your turn comes you can pick seats.'],
  closed: ['Sale closed', 'This sale has closed. No more tickets can be bought here.'],
};

export function eventHeader(ev) {
  const [label, text] = STATUS[ev.status] || [ev.status, ''];
  const seated = ev.sections.filter((s) => s.kind === 'seated');
  const standing = ev.sections.filter((s) => s.kind !== 'seated');
  const free = ev.counts ? ev.counts.free : null;
  return h(
    'section',
    { class: 'event card', 'aria-labelledby': 'event-name' },
    h('h1', { id: 'event-name' }, ev.name),
    ev.venue ? h('p', { class: 'venue', id: 'venue' }, h('strong', {}, ev.venue)) : null,
    h('p', { class: 'venue' }, layoutLine(ev, seated, standing)),
    h('p', { class: `status status-${ev.status}` }, h('strong', {}, label), ' \u2014 ', text),
    ev.status === 'scheduled' ? opening(ev.opens_at) : null,
    free !== null ? h('p', { class: 'counts' }, `${free.toLocaleString()} of ${ev.capacity.toLocaleString()} tickets still available.`) : null,
    h('h2', {}, 'Prices'),
    h(
      'ul',
      { class: 'tiers' },
      ev.tiers.map((t) => h('li', {}, h('span', {}, t.name), h('span', { class: 'price' }, money(t.price, ev.currency)))),
    ),
    h('p', { class: 'hint' }, `Up to ${ev.sale.max_tickets_per_buyer} tickets per buyer. Seats you pick are held for ${Math.round(ev.sale.hold_ttl_s / 60)} minutes while you pay.`),
  );
}

/** "Opens in 1 h 05 min (date)", counting down each second while on the page. */
function opening(at) {
  if (!at) return h('p', { class: 'opening' }, 'The organiser opens the sale; no opening time has been announced.');
  const when = new Date(at).toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'short' });
  const left = h('strong', {});
  const el = h('p', { class: 'opening', id: 'opening' }, 'Announced to open ', h('time', { datetime: new Date(at).toISOString() }, when), ': ', left, '.');
  const tick = () => {
    const s = (at - serverNow()) / 1000;
    left.textContent = s > 0 ? `in ${duration(s)}` : 'any moment now';
    return s > 0;
  };
  tick();
  const timer = setInterval(() => {
    if (!el.isConnected || !tick()) clearInterval(timer);
  }, 1000);
  return el;
}

function layoutLine(ev, seated, standing) {
  const parts = [];
  if (seated.length) parts.push(`${seated.length} seated ${seated.length === 1 ? 'section' : 'sections'}`);
  if (standing.length) parts.push(`${standing.map((s) => s.name).join(', ')} (standing)`);
  return `${parts.join(' and ')}, ${ev.capacity.toLocaleString()} places in all.`;
}
