// The buyer app: who the buyer is (in demo mode, an anonymous buyer created through
// self sign-up and kept in localStorage), and the pages: the event (#/ or
// #/events/ID), the list of events (#/events) and my orders (#/orders).
import { ApiError, api, newKey, write } from './api.js';
import { eventHeader } from './event.js';
import { eventsView } from './list.js';
import { ordersView } from './orders.js';
import { WaitingRoom } from './queue.js';
import { Shop } from './shop.js';
import { fill, h, notice, store } from './ui.js';

const main = document.getElementById('main');
let current = [];
// These pages may load a hosted human check's script into this origin: the console's
// operator key, kept for the tab it was typed in, is not left here for it to read.
store.set('session', 'operator_key', null);

async function buyer() {
  const saved = store.get('local', 'buyer');
  if (saved?.token) return saved;
  // The key is the secret that gets a lost answer back: random, kept until it worked.
  const key = store.get('local', 'buyer_key') || newKey();
  store.set('local', 'buyer_key', key);
  const { data } = await write('/v1/buyers', { method: 'POST', idem: key });
  store.set('local', 'buyer', data);
  store.set('local', 'buyer_key', null);
  return data;
}

function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  if (hash === 'orders') return { page: 'orders' };
  if (hash === 'events') return { page: 'list' };
  const m = /^events\/(\d+)/.exec(hash);
  return { page: 'event', id: m ? Number(m[1]) : 1 };
}

async function show() {
  for (const c of current) c.stop?.();
  current = [];
  const r = route();
  for (const a of document.querySelectorAll('nav a')) a.toggleAttribute('aria-current', a.dataset.page === r.page);
  if (r.page === 'list') {
    document.title = 'Events \u2014 Box office';
    fill(main, await eventsView());
    return;
  }
  let who;
  try {
    who = await buyer();
  } catch (e) {
    const text = e instanceof ApiError && e.code === 'self_signup_disabled' ? e.message : `We could not start your visit: ${e.message}`;
    fill(main, notice('error', text));
    return;
  }
  if (r.page === 'orders') {
    fill(main, await ordersView(who));
    return;
  }
  await eventPage(r.id, who);
}

async function eventPage(id, who) {
  let ev;
  try {
    ({ data: ev } = await api(`/v1/events/${id}`));
  } catch (e) {
    fill(main, notice('error', e.message));
    return;
  }
  document.title = `${ev.name} \u2014 Box office`;
  document.querySelector('nav a[data-page="event"]')?.setAttribute('href', `#/events/${id}`);
  const shopSlot = h('div');
  const room = new WaitingRoom({
    eventId: id,
    buyer: who,
    onAdmitted: (admission) => {
      const shop = new Shop({ event: ev, buyer: who, admission, onExpired: (msg) => {
        shop.stop();
        fill(shopSlot);
        room.expire(msg);
      } });
      current.push(shop);
      fill(shopSlot, shop.el);
      shop.start();
    },
  });
  current.push(room);
  fill(main, eventHeader(ev), ev.status === 'closed' ? null : room.el, shopSlot);
  if (ev.status !== 'closed') room.start();
}

window.addEventListener('hashchange', show);
show();
