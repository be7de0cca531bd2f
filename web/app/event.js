// The event's page header: name, where it is (its sections), price tiers, the sale's
// status and what that means for someone arriving now.
import { h, money } from './ui.js';

const STATUS = {
  scheduled: ['Not on sale yet', 'The sale has not opened. Join the line now: when it opens, everyone who joined before is placed in a fair random order, ahead of later arrivals. The organiser opens the sale; no opening time has been published here.'],
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
    h('p', { class: 'venue' }, venueLine(ev, seated, standing)),
    h('p', { class: `status status-${ev.status}` }, h('strong', {}, label), ' \u2014 ', text),
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

function venueLine(ev, seated, standing) {
  const parts = [];
  if (seated.length) parts.push(`${seated.length} seated ${seated.length === 1 ? 'section' : 'sections'}`);
  if (standing.length) parts.push(`${standing.map((s) => s.name).join(', ')} (standing)`);
  return `Venue: ${parts.join(' and ')}, ${ev.capacity.toLocaleString()} places in all.`;
}
