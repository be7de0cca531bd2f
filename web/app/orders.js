// My orders: every order of this buyer, with where the money is and the tickets.
import { api } from './api.js';
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
    fill(
      el,
      h('h1', { id: 'orders-title' }, 'My orders'),
      orders.length ? h('ul', { class: 'orders' }, orders.map(order)) : h('p', {}, 'You have no orders yet.'),
      h('p', {}, h('a', { href: '#/' }, 'Back to the event')),
    );
  } catch (e) {
    fill(el, h('h1', { id: 'orders-title' }, 'My orders'), notice('error', e.message));
  }
  setTimeout(() => focusOn(el.querySelector('h1')));
  return el;
}

function order(o) {
  return h(
    'li',
    { class: `order order-${o.status}` },
    h('h2', {}, `${LABELS[o.status] || o.status} \u00b7 ${money(o.total, o.currency)}`),
    h('p', {}, o.message),
    h('p', { class: 'hint' }, `Order ${o.order_id}, ${new Date(o.created_at).toLocaleString()}`),
    o.tickets.length
      ? h('ul', { class: 'picks tickets', 'aria-label': 'Tickets' }, o.tickets.map((t) => h('li', {}, h('span', {}, t.seat_id), h('span', { class: 'mono' }, `Ticket ${t.ticket_id}`))))
      : h('p', {}, `Seats: ${o.seat_ids.join(', ')}`),
  );
}
