// The list of events on sale or soon on sale: name, venue, when it opens, from what price.
import { api } from './api.js';
import { fill, focusOn, h, money, notice } from './ui.js';

const STATUS = { scheduled: 'Opens soon', open: 'On sale now' };

export async function eventsView() {
  const el = h('section', { class: 'card', 'aria-labelledby': 'list-title' }, h('h1', { id: 'list-title' }, 'Events'), h('p', {}, 'Loading\u2026'));
  try {
    const { data } = await api('/v1/events?status=open,scheduled&limit=50');
    fill(
      el,
      h('h1', { id: 'list-title' }, 'Events'),
      data.events.length
        ? h('ul', { class: 'orders event-list' }, data.events.map(item))
        : h('p', {}, 'Nothing is on sale right now.'),
    );
  } catch (e) {
    fill(el, h('h1', { id: 'list-title' }, 'Events'), notice('error', e.message));
  }
  setTimeout(() => focusOn(el.querySelector('h1')));
  return el;
}

function item(e) {
  const bits = [STATUS[e.status] || e.status];
  if (e.status === 'scheduled' && e.opens_at) bits.push(`opens ${new Date(e.opens_at).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })}`);
  if (e.price_from !== null) bits.push(`from ${money(e.price_from, e.currency)}`);
  if (e.counts) bits.push(`${e.counts.free.toLocaleString()} of ${e.capacity.toLocaleString()} left`);
  return h(
    'li',
    { class: 'order' },
    h('h2', {}, h('a', { href: `#/events/${e.event_id}` }, e.name)),
    e.venue ? h('p', { class: 'venue' }, e.venue) : null,
    h('p', {}, bits.join(' \u00b7 ')),
  );
}
