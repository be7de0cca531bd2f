// My orders: every order of this buyer, with where the money is and the tickets, each
// with its barcode once the order is confirmed and, for events that name attendees,
// the name on it and a form to set it.
import { api, write } from './api.js';
import { barcode } from './qr.js';
import { fill, focusOn, h, money, notice } from './ui.js';

const LABELS = {
  confirmed: 'Confirmed',
  pending_payment: 'Waiting for payment',
  authorized: 'Payment reserved',
  committed: 'Being completed',
  pending_capture: 'Being completed',
  declined: 'Declined',
  lost: 'Not completed',
  voided: 'Cancelled, not charged',
  refunded: 'Refunded',
  voiding: 'Being cancelled',
  refunding: 'Being refunded',
  cancelling: 'Being cancelled',
  cancelled: 'Cancelled',
};

export async function ordersView(buyer) {
  const el = h('section', { class: 'card', 'aria-labelledby': 'orders-title' }, h('h1', { id: 'orders-title' }, 'My orders'), h('p', {}, 'Loading\u2026'));
  try {
    const { data } = await api('/v1/me/orders', { token: buyer.token });
    const orders = [...data.orders].sort((a, b) => b.created_at - a.created_at);
    const views = new Map();
    if (orders.some((o) => o.tickets.length)) {
      try {
        const { data: t } = await api('/v1/me/tickets', { token: buyer.token });
        // A seat's ticket, by event and seat; a valid one wins over an older revoked one.
        for (const v of t.tickets) {
          const k = `${v.event_id}:${v.seat}`;
          if (!views.has(k) || v.status !== 'revoked') views.set(k, v);
        }
      } catch {
        /* the orders still show; only the barcodes are missing */
      }
      await namePolicies(orders, views);
    }
    fill(
      el,
      h('h1', { id: 'orders-title' }, 'My orders'),
      orders.length ? h('ul', { class: 'orders' }, orders.map((o) => order(o, views, buyer.token))) : h('p', {}, 'You have no orders yet.'),
      h('p', {}, h('a', { href: '#/' }, 'Back to the event')),
    );
  } catch (e) {
    fill(el, h('h1', { id: 'orders-title' }, 'My orders'), notice('error', e.message));
  }
  setTimeout(() => focusOn(el.querySelector('h1')));
  return el;
}

// Whether each event of a confirmed order names its attendees (`views.names`, by
// event id); an event that cannot be read shows no name form.
async function namePolicies(orders, views) {
  views.names = new Map();
  const ids = [...new Set(orders.filter((o) => o.status === 'confirmed').map((o) => o.event_id))];
  for (const id of ids) {
    try {
      const { data } = await api(`/v1/events/${id}`);
      views.names.set(id, data.sale?.attendee_names || 'off');
    } catch {
      views.names.set(id, 'off');
    }
  }
}

// The attendee's name on a valid ticket, and a form to set it (a change issues a new
// barcode; the event may limit or close changes, and the refusal says so).
function attendee(view, token, policy) {
  if (!policy || policy === 'off') return null;
  const msg = h('div', { 'aria-live': 'polite' });
  const id = `name-${view.ticket_id}`;
  const input = h('input', { id, type: 'text', maxlength: '64', value: view.attendee || '', required: true });
  const form = h(
    'form',
    { class: 'attendee-form', onsubmit: async (e) => {
      e.preventDefault();
      try {
        await write(`/v1/tickets/${view.ticket_id}/attendee`, { method: 'PUT', token, body: { name: input.value } });
        fill(msg, notice('info', 'Saved. Reload your orders to show the ticket with its new barcode.'));
      } catch (err) {
        fill(msg, notice('error', err.message));
      }
    } },
    h('label', { for: id }, view.attendee ? 'Attendee' : 'Attendee (needed before the doors open)'),
    input,
    h('button', { type: 'submit', class: 'secondary' }, view.attendee ? 'Change name' : 'Save name'),
  );
  return h('div', {}, form, msg);
}

function ticket(o, t, views, token) {
  const view = o.status === 'confirmed' ? views.get(`${o.event_id}:${t.seat_id}`) : null;
  return h(
    'li',
    { class: 'ticket' },
    h('span', {}, t.seat_id),
    h('span', { class: 'mono' }, `Ticket ${t.ticket_id}`),
    view && view.attendee ? h('span', {}, `Name: ${view.attendee}`) : null,
    view && view.status === 'valid' ? barcode(view, token) : null,
    view && view.status === 'valid' ? attendee(view, token, views.names?.get(o.event_id)) : null,
    view && view.status === 'checked_in' ? h('span', {}, 'Used at the door') : null,
  );
}

function order(o, views, token) {
  return h(
    'li',
    { class: `order order-${o.status}` },
    h('h2', {}, `${LABELS[o.status] || o.status} \u00b7 ${money(o.total, o.currency)}`),
    h('p', {}, o.message),
    h('p', { class: 'hint' }, `Order ${o.order_id}, ${new Date(o.created_at).toLocaleString()}`),
    o.tickets.length
      ? h('ul', { class: 'picks tickets', 'aria-label': 'Tickets' }, o.tickets.map((t) => ticket(o, t, views, token)))
      : h('p', {}, `Seats: ${o.seat_ids.join(', ')}`),
  );
}
