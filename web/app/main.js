// The buyer app: who the buyer is (in demo mode, an anonymous buyer created through
// self sign-up and kept in localStorage), and the pages: the event (#/ or
// #/events/ID), the list of events (#/events) and my orders (#/orders).
import { ApiError, api, clockSkewMs, newKey, write } from './api.js';
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

// Set when the saved buyer's token was refused and a new visit began: the page says so.
let restarted = false;

// The buyer's token lapses (`expires_at`). It is renewed once half its life has passed
// (`renew_at`, in the server's time), so a buyer who comes back keeps their orders. A
// token the box office refuses (lapsed after a long absence, or its key retired) is
// dropped and a new visit starts; a renewal that fails for now is tried next time.
async function buyer() {
  const saved = store.get('local', 'buyer');
  if (saved?.token) {
    if (serverNow() < (saved.renew_at ?? 0)) return saved;
    try {
      const { data } = await write('/v1/me/token', { method: 'POST', token: saved.token });
      return keep(data);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) return saved;
      store.set('local', 'buyer', null);
      restarted = true;
    }
  }
  // The key is the secret that gets a lost answer back: random, kept until it worked.
  const key = store.get('local', 'buyer_key') || newKey();
  store.set('local', 'buyer_key', key);
  const { data } = await write('/v1/buyers', { method: 'POST', idem: key });
  store.set('local', 'buyer_key', null);
  return keep(data);
}

/** Keeps the buyer and their token, with when to renew it: half its life from now. */
function keep(data) {
  const now = serverNow();
  const who = { ...data, renew_at: now + Math.max(0, (data.expires_at ?? now) - now) / 2 };
  store.set('local', 'buyer', who);
  return who;
}

function serverNow() {
  return Date.now() + clockSkewMs;
}

/** What the page says when the visit on this device started again, or null. */
function restartNotice() {
  if (!restarted) return null;
  restarted = false;
  return notice('info', 'Your earlier visit on this device had ended, so a new one has started. Orders made in it can no longer be shown here.');
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
  const said = restartNotice();
  if (r.page === 'orders') {
    fill(main, said, await ordersView(who));
    return;
  }
  await eventPage(r.id, who, said);
}

async function eventPage(id, who, said) {
  let ev;
  try {
    ({ data: ev } = await api(`/v1/events/${id}`));
  } catch (e) {
    fill(main, said, notice('error', e.message));
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
  fill(main, said, eventHeader(ev), ev.status === 'closed' ? null : room.el, shopSlot);
  if (ev.status !== 'closed') room.start();
}

window.addEventListener('hashchange', show);
show();
