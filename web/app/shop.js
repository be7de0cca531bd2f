// After admission: the seat map and the three ways to choose (seats on the map, the
// best N in a section, a standing quantity), the hold with its countdown, and checkout
// with the test payment methods, including a payment the provider has not settled yet;
// and the face-value exchange: seats other holders offer, marked on the map with their
// price and listed beside it, bought in one step (or, when the bank asks the buyer to
// confirm, once they have).
import { ApiError, api, newKey, serverNow, sleep, write } from './api.js';
import { proving } from './pop.js';
import { SeatMap } from './seatmap.js';
import { announce, clock, fill, focusOn, h, money, notice, store } from './ui.js';

const METHODS = [
  ['pm_card_visa', 'Test Visa card', 'approves the payment'],
  ['pm_card_declined', 'Test card that is declined', 'shows what a decline looks like'],
  ['pm_card_threeDSecure', 'Test card with 3-D Secure', 'your bank asks you to confirm'],
  ['pm_bank_redirect', 'Bank payment', 'you confirm at your bank'],
  ['pm_timeout_after_charge', 'Slow provider', 'the provider does not answer at once; the box office settles it later'],
];
const PENDING = new Set(['pending_payment', 'authorized', 'committed', 'pending_capture']);
// The exchange pays in the request, or once the buyer has confirmed at their bank.
const EXCHANGE_METHODS = METHODS.filter(([v]) => ['pm_card_visa', 'pm_card_declined', 'pm_card_threeDSecure'].includes(v));
// How many listings the app reads (pages of 50) and how often it reads them again.
const LISTING_PAGES = 4;
const LISTINGS_EVERY_MS = 20_000;

export class Shop {
  constructor({ event, buyer, admission, onExpired }) {
    this.ev = event;
    this.buyer = buyer;
    this.admission = admission;
    this.onExpired = onExpired;
    this.key = `hold.${event.event_id}`;
    this.max = event.sale.max_tickets_per_buyer;
    this.el = h('section', { class: 'card shop', 'aria-labelledby': 'shop-title' });
    this.msg = h('div', { class: 'shop-msg', 'aria-live': 'polite' });
  }

  async start() {
    fill(this.el, h('h2', { id: 'shop-title' }, 'Choose your seats'), this.msg, h('p', {}, 'Loading the seat map\u2026'));
    const saved = store.get('session', this.key);
    if (saved?.hold_id) {
      try {
        const { data } = await api(`/v1/holds/${saved.hold_id}`, { token: this.buyer.token });
        if (data.status === 'held' || data.status === 'checking_out' || data.status === 'payment_pending') return this.showHold({ ...saved, ...data });
      } catch {
        /* gone: pick again */
      }
      store.set('session', this.key, null);
    }
    await this.showPicker();
  }

  stop() {
    this.stream?.close();
    clearInterval(this.tick);
    clearInterval(this.listingTick);
    this.stopped = true;
  }

  // --- choosing -------------------------------------------------------------------

  async showPicker(message) {
    clearInterval(this.tick);
    if (message) fill(this.msg, message);
    if (!this.map) {
      try {
        performance.mark('seatmap-fetch');
        const { data } = await api(`/v1/events/${this.ev.event_id}/seatmap`);
        this.map = new SeatMap(data, {
          currency: this.ev.currency,
          maxPick: this.max,
          onChange: (sel) => this.renderSelection(sel),
          onPickGa: (sec) => this.chooseMode('ga', sec.key),
          onLost: (ids) => fill(this.msg, notice('warn', `Someone else just took ${ids.join(', ')}. We removed ${ids.length === 1 ? 'it' : 'them'} from your picks; choose another or let us find the best seats for you.`)),
          onPickListing: (l) => this.offerListing(l),
        });
        this.follow();
        this.exchangeBox = h('section', { class: 'exchange', 'aria-labelledby': 'exchange-title' });
        this.loadListings();
        this.listingTick = setInterval(() => this.loadListings(), LISTINGS_EVERY_MS);
      } catch (e) {
        fill(this.el, h('h2', { id: 'shop-title' }, 'Choose your seats'), notice('error', e.message));
        return;
      }
    }
    const seated = this.ev.sections.filter((s) => s.kind === 'seated');
    const standing = this.ev.sections.filter((s) => s.kind !== 'seated');
    const modes = [['map', 'Pick seats on the map'], ['best', 'Best seats in a section'], standing.length ? ['ga', 'Standing tickets'] : null].filter(Boolean);
    this.modeBox = h(
      'fieldset',
      { class: 'modes' },
      h('legend', {}, 'How do you want to choose?'),
      modes.map(([v, label]) => h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'mode', value: v, onchange: () => this.chooseMode(v) }), label)),
    );
    this.selBox = h('div', { class: 'selection' });
    this.panels = {
      map: h('div', { class: 'panel' }, this.map.el, this.selBox, this.byNameForm(), this.exchangeBox),
      best: h('div', { class: 'panel' }, this.quantityForm('best', seated, 'Hold the best seats')),
      ga: h('div', { class: 'panel' }, this.quantityForm('ga', standing, 'Hold standing tickets')),
    };
    fill(this.el, h('h2', { id: 'shop-title' }, 'Choose your seats'), this.msg, this.modeBox, ...Object.values(this.panels));
    this.chooseMode(this.mode || 'map');
    this.renderSelection(this.map.selection());
    if (!message) focusOn(this.el.querySelector('h2'));
  }

  chooseMode(mode, sectionKey) {
    this.mode = mode;
    for (const input of this.modeBox.querySelectorAll('input')) input.checked = input.value === mode;
    for (const [k, p] of Object.entries(this.panels)) p.hidden = k !== mode;
    if (sectionKey) {
      const select = this.panels[mode].querySelector('select');
      if (select) select.value = sectionKey;
      focusOn(select);
    }
    if (mode === 'map') this.map.resize();
  }

  renderSelection(sel) {
    const total = sel.reduce((a, s) => a + s.price, 0);
    fill(
      this.selBox,
      h('h3', {}, sel.length ? `Your picks (${sel.length} of at most ${this.max})` : 'No seats picked yet'),
      sel.length
        ? h('ul', { class: 'picks' }, sel.map((s) => h('li', {}, h('span', {}, `${s.seat_id} \u00b7 ${s.tier?.name ?? ''}`), h('span', { class: 'price' }, money(s.price, this.ev.currency)))))
        : h('p', { class: 'hint' }, 'Click free seats on the map, or focus the map and use the arrow keys and Enter.'),
      sel.length ? h('p', { class: 'total' }, 'Total: ', h('strong', {}, money(total, this.ev.currency))) : null,
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'primary', disabled: !sel.length, onclick: () => this.hold({ seat_ids: sel.map((s) => s.seat_id) }) }, sel.length ? `Hold ${sel.length === 1 ? 'this seat' : `these ${sel.length} seats`}` : 'Hold seats'),
        sel.length ? h('button', { type: 'button', class: 'secondary', onclick: () => this.map.clear() }, 'Clear picks') : null),
    );
  }

  byNameForm() {
    const input = h('input', { id: 'seat-name', type: 'text', autocomplete: 'off', placeholder: 'e.g. L1-3-12', spellcheck: 'false' });
    return h(
      'form',
      { class: 'inline-form', onsubmit: (e) => {
        e.preventDefault();
        const id = input.value.trim().toUpperCase();
        const i = this.map.byId.get(id);
        if (i === undefined) return fill(this.msg, notice('error', `There is no seat called \u201c${id}\u201d.`));
        if (!this.map.selected.has(i)) this.map.toggle(i);
        input.value = '';
      } },
      h('label', { for: 'seat-name' }, 'Add a seat by its name'),
      input,
      h('button', { type: 'submit', class: 'secondary' }, 'Add seat'),
    );
  }

  quantityForm(kind, sections, action) {
    const sel = h('select', { id: `${kind}-section` }, sections.map((s) => h('option', { value: s.key }, s.name)));
    const qty = h('select', { id: `${kind}-qty` }, Array.from({ length: this.max }, (_, i) => h('option', { value: String(i + 1) }, String(i + 1))));
    const price = h('p', { class: 'total', 'aria-live': 'polite' });
    const update = () => {
      const sec = this.map?.sections.find((s) => s.key === sel.value);
      if (!sec) return;
      const n = Number(qty.value);
      const m = (v) => money(v, this.ev.currency);
      price.textContent = sec.low === sec.high
        ? `${m(sec.low)} each, ${m(sec.low * n)} in all`
        : `${m(sec.low)} to ${m(sec.high)} each depending on the row, ${m(sec.low * n)} to ${m(sec.high * n)} in all`;
    };
    sel.addEventListener('change', update);
    qty.addEventListener('change', update);
    update();
    return h(
      'form',
      { class: 'qty-form', onsubmit: (e) => {
        e.preventDefault();
        this.hold({ best_available: { section: sel.value, quantity: Number(qty.value) } });
      } },
      h('div', { class: 'field' }, h('label', { for: `${kind}-section` }, kind === 'ga' ? 'Standing area' : 'Section'), sel),
      h('div', { class: 'field' }, h('label', { for: `${kind}-qty` }, 'How many'), qty),
      price,
      h('button', { type: 'submit', class: 'primary' }, action),
    );
  }

  follow() {
    const url = `/v1/events/${this.ev.event_id}/availability`;
    api(url).then(({ data }) => this.map.setSnapshot(data.bitmap)).catch((e) => fill(this.msg, notice('warn', `Seat availability is not shown: ${e.message}`)));
    if (typeof EventSource === 'undefined') return;
    this.stream = new EventSource(`${url}/stream`);
    this.stream.addEventListener('snapshot', (m) => this.map.setSnapshot(JSON.parse(m.data).bitmap));
    this.stream.addEventListener('delta', (m) => {
      const d = JSON.parse(m.data);
      this.map.applyDelta(d.free || [], d.taken || []);
    });
  }

  // --- the exchange ---------------------------------------------------------------

  /** Reads the event's open listings (a few pages) and shows them on the map and in a list. */
  async loadListings() {
    const all = [];
    let after = '';
    try {
      for (let page = 0; page < LISTING_PAGES; page++) {
        const q = after ? `?limit=50&after=${after}` : '?limit=50';
        const { data } = await api(`/v1/events/${this.ev.event_id}/listings${q}`);
        all.push(...data.listings.filter((l) => l.state === 'open'));
        if (!data.next_after) break;
        after = data.next_after;
      }
    } catch {
      return; // no exchange for this event, or not now: nothing to show
    }
    this.listings = all;
    this.map?.setListings(all);
    this.renderExchange();
  }

  renderExchange() {
    if (!this.exchangeBox) return;
    const listings = this.listings || [];
    if (!listings.length) return fill(this.exchangeBox);
    const m = (v) => money(v, this.ev.currency);
    fill(
      this.exchangeBox,
      h('h3', { id: 'exchange-title' }, `On the exchange (${listings.length})`),
      h('p', { class: 'hint' }, 'Tickets other fans cannot use, offered at face value or less. They are marked on the map in yellow with their price.'),
      h('ul', { class: 'picks listings' }, listings.map((l) => h(
        'li',
        {},
        h('span', {}, l.seat_id),
        h('span', { class: 'price' }, m(l.price)),
        h('button', { type: 'button', class: 'secondary', onclick: () => this.offerListing(l) }, `Buy ${l.seat_id} for ${m(l.price)}`),
      ))),
      this.offerBox || null,
    );
  }

  /** The buyer picked a seat on the exchange: how to pay for it. */
  offerListing(listing) {
    const m = money(listing.price, this.ev.currency);
    const methods = h(
      'fieldset',
      { class: 'methods' },
      h('legend', {}, 'Pay with (test payment provider: no money is taken)'),
      EXCHANGE_METHODS.map(([v, name, what], i) => h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'exchange-method', value: v, checked: i === 0 }), h('span', {}, h('strong', {}, name), ` — ${what}`))),
    );
    const key = newKey();
    this.offerBox = h(
      'form',
      { class: 'pay offer', 'aria-labelledby': 'offer-title', onsubmit: (e) => {
        e.preventDefault();
        this.buyListing(listing, methods.querySelector('input:checked').value, key);
      } },
      h('h4', { id: 'offer-title' }, `Seat ${listing.seat_id} from the exchange, ${m}`),
      methods,
      h('div', { class: 'actions' },
        h('button', { type: 'submit', class: 'primary', id: 'buy-listing' }, `Buy for ${m}`),
        h('button', { type: 'button', class: 'secondary', onclick: () => { this.offerBox = null; this.renderExchange(); } }, 'Not this one')),
      h('div', { class: 'offer-msg', 'aria-live': 'polite' }),
    );
    this.chooseMode('map');
    this.renderExchange();
    focusOn(this.offerBox.querySelector('h4'));
  }

  async buyListing(listing, method, key) {
    const box = this.offerBox;
    const say = (n) => fill(box.querySelector('.offer-msg'), n);
    const btn = box.querySelector('#buy-listing');
    btn.disabled = true;
    say(notice('info', 'Paying… do not close this page.'));
    try {
      const { data } = await write(`/v1/listings/${listing.listing_id}/purchase`, {
        method: 'POST',
        token: this.admission,
        headers: { 'X-Buyer-Session': this.buyer.token },
        idem: key,
        body: { payment_method: method },
      });
      this.offerBox = null;
      this.listings = (this.listings || []).filter((l) => l.listing_id !== listing.listing_id);
      this.map.setListings(this.listings);
      this.renderExchange();
      if (data.state === 'done' || data.state === 'moved') return this.listingBought(listing, data);
      return this.listingPending(listing, data);
    } catch (e) {
      btn.disabled = false;
      if (e instanceof ApiError && ['admission_expired', 'token_expired', 'not_admitted'].includes(e.code)) return this.onExpired(e.message);
      if (e instanceof ApiError && ['listing_not_open', 'listing_not_found'].includes(e.code)) {
        this.offerBox = null;
        await this.loadListings();
      }
      const where = this.offerBox === box ? box.querySelector('.offer-msg') : this.msg;
      fill(where, notice('error', e.message));
    }
  }

  /** The seat bought on the exchange is the buyer's. */
  listingBought(listing, swap) {
    fill(
      this.msg,
      notice(
        'ok',
        h('p', {}, h('strong', {}, `Seat ${listing.seat_id} is yours. `), `You paid ${money(swap.price, this.ev.currency)}; the ticket is in your tickets.`),
        h('p', {}, h('a', { href: '#/orders' }, 'See my tickets')),
      ),
    );
    announce(`Seat ${listing.seat_id} bought from the exchange.`);
    focusOn(this.msg.querySelector('p'));
  }

  /** A purchase not settled yet: the buyer's bank asks them to confirm (3-D Secure), or
   *  the provider has not answered. The seat stays reserved for them; the page follows
   *  the purchase until the ticket is theirs, or the listing is open again (the
   *  payment did not go through, nothing was taken). */
  async listingPending(listing, swap) {
    const action = swap.next_action;
    const bank = action?.type === 'redirect_to_url' && action.url;
    const reachable = bank && !new URL(bank, location.href).hostname.endsWith('.invalid');
    fill(
      this.msg,
      notice(
        'warn',
        h('p', {}, h('strong', {}, `Seat ${listing.seat_id} is reserved for you. `), 'The payment is not confirmed yet.'),
        bank
          ? reachable
            ? h('p', {}, 'Your bank asks you to confirm this payment: ', h('a', { href: bank, target: '_blank', rel: 'noopener' }, 'confirm at your bank (opens a new tab)'), '. The ticket is yours once you do; this page updates by itself.')
            : h('p', {}, 'Your bank asks you to confirm this payment. This demo\u2019s test provider has no bank page to show; the seat stays reserved until the provider settles it.')
          : h('p', {}, 'The payment is being settled, and you will not be charged twice. This page updates by itself.'),
      ),
    );
    announce(`Seat ${listing.seat_id} is reserved for you; the payment is not confirmed yet.`);
    focusOn(this.msg.querySelector('p'));
    await this.pollUntil(async () => {
      try {
        const { data } = await api('/v1/me/tickets', { token: this.buyer.token });
        if (data.tickets.some((t) => t.ticket_id === swap.ticket_id)) {
          this.listingBought(listing, swap);
          return true;
        }
      } catch {
        return false; // keep waiting: the purchase is safe on the server
      }
      await this.loadListings();
      if ((this.listings || []).some((l) => l.listing_id === listing.listing_id)) {
        fill(this.msg, notice('error', h('p', {}, h('strong', {}, 'The payment did not go through. '), `Seat ${listing.seat_id} is back on the exchange; no money was taken.`)));
        focusOn(this.msg.querySelector('p'));
        return true;
      }
      return false;
    });
  }

  /** Calls `step` until it answers true: after a second, then backing off to every ten,
   *  for half an hour at most, and no more once the page has stopped. */
  async pollUntil(step) {
    let wait = 1000;
    const until = Date.now() + 30 * 60 * 1000;
    while (!this.stopped && Date.now() < until) {
      await sleep(wait);
      wait = Math.min(wait * 1.5, 10000);
      if (await step()) return;
    }
  }

  // --- the hold -------------------------------------------------------------------

  async hold(body) {
    const buttons = [...this.el.querySelectorAll('button')];
    buttons.forEach((b) => (b.disabled = true));
    fill(this.msg, notice('info', 'Holding your seats\u2026'));
    try {
      const path = `/v1/events/${this.ev.event_id}/holds`;
      const { data } = await write(path, {
        method: 'POST',
        dpop: proving('POST', path),
        token: this.admission,
        headers: { 'X-Buyer-Session': this.buyer.token },
        body,
      });
      this.map.clear();
      await this.showHold({ ...data, pay_key: newKey() });
    } catch (e) {
      buttons.forEach((b) => (b.disabled = false));
      this.holdRefused(e, body);
    }
  }

  holdRefused(e, body) {
    if (!(e instanceof ApiError)) return fill(this.msg, notice('error', String(e.message || e)));
    if (['admission_expired', 'token_expired', 'not_admitted'].includes(e.code)) return this.onExpired(e.message);
    if (e.code === 'seat_unavailable' && body.seat_ids) {
      const first = this.map.byId.get(body.seat_ids[0]);
      const section = first === undefined ? null : this.map.sections[this.map.secOf[first]].key;
      const known = section !== null;
      fill(
        this.msg,
        notice(
          'warn',
          h('p', {}, h('strong', {}, 'Those seats are gone. '), 'Someone else took one or more of them a moment before you, so nothing was held. The map now shows them as taken.'),
          h('div', { class: 'actions' },
            known ? h('button', { type: 'button', class: 'primary', onclick: () => this.hold({ best_available: { section, quantity: body.seat_ids.length } }) }, `Hold the best ${body.seat_ids.length} in ${this.sectionName(section)} instead`) : null,
            h('button', { type: 'button', class: 'secondary', onclick: () => { fill(this.msg); this.chooseMode('map'); focusOn(this.map.canvas); } }, 'Pick other seats')),
        ),
      );
      for (const id of body.seat_ids) {
        const i = this.map.byId.get(id);
        if (i !== undefined && this.map.isFree(i) === false) this.map.selected.delete(i);
      }
      this.map.changed();
      focusOn(this.msg.querySelector('button'));
      return;
    }
    if (e.code === 'seat_unavailable' || e.code === 'sold_out') {
      return fill(this.msg, notice('warn', e.code === 'sold_out' ? 'There are not that many seats left together in that section. Try fewer seats or another section.' : e.message));
    }
    const wait = e.code === 'rate_limited' && e.retryAfterS ? ` (wait ${e.retryAfterS} s)` : '';
    fill(this.msg, notice('error', e.message + wait));
  }

  sectionName(key) {
    return this.ev.sections.find((s) => s.key === key)?.name || key;
  }

  async showHold(hold) {
    this.holdData = hold;
    store.set('session', this.key, { hold_id: hold.hold_id, pay_key: hold.pay_key });
    const countdown = h('strong', { id: 'countdown' }, '');
    const bar = h('progress', { max: String(this.ev.sale.hold_ttl_s), value: '0', 'aria-label': 'Time left on your hold' });
    const methods = h(
      'fieldset',
      { class: 'methods' },
      h('legend', {}, 'Pay with (test payment provider: no money is taken)'),
      METHODS.map(([v, name, what], i) => h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'method', value: v, checked: i === 0 }), h('span', {}, h('strong', {}, name), ` \u2014 ${what}`))),
    );
    this.payMsg = h('div', { 'aria-live': 'polite' });
    const names = this.nameFields(hold);
    const payForm = h(
      'form',
      { class: 'pay', onsubmit: (e) => {
        e.preventDefault();
        this.pay(methods.querySelector('input:checked').value);
      } },
      names,
      methods,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', id: 'pay' }, `Pay ${money(hold.price_quote, this.ev.currency)}`), h('button', { type: 'button', class: 'secondary', onclick: () => this.release() }, 'Release these seats')),
    );
    fill(
      this.el,
      h('h2', { id: 'shop-title' }, 'Your seats are held'),
      this.msg,
      h('p', { class: 'held' }, 'Held for you for ', countdown, '. Pay before then, or they go back on sale.'),
      bar,
      h('ul', { class: 'picks' }, hold.seat_ids.map((id, i) => h('li', {}, h('span', {}, id), h('span', { class: 'price' }, money(hold.prices[i] ?? 0, this.ev.currency))))),
      h('p', { class: 'total' }, 'Total: ', h('strong', {}, money(hold.price_quote, this.ev.currency))),
      payForm,
      this.payMsg,
    );
    fill(this.msg);
    const update = () => {
      const left = (hold.expires_at - serverNow()) / 1000;
      countdown.textContent = clock(left);
      bar.value = Math.max(0, left);
      if (left <= 0 && !this.paying) {
        clearInterval(this.tick);
        store.set('session', this.key, null);
        this.showPicker(notice('warn', 'Your hold ran out of time and the seats went back on sale. Pick again.'));
      }
    };
    update();
    clearInterval(this.tick);
    this.tick = setInterval(update, 1000);
    announce(`${hold.seat_ids.length} seats held. Total ${money(hold.price_quote, this.ev.currency)}.`);
    focusOn(this.el.querySelector('h2'));
  }

  // The attendee's name for each seat, for events whose tickets carry names: required
  // at checkout, or optional when the holder may name the tickets later.
  nameFields(hold) {
    const policy = this.ev.sale.attendee_names || 'off';
    if (policy === 'off') return null;
    const required = policy === 'at_checkout';
    return h(
      'fieldset',
      { class: 'names' },
      h('legend', {}, required ? 'Who is coming? The name of each attendee is printed on their ticket.' : 'Who is coming? Name each attendee now, or later in your tickets before the doors open.'),
      hold.seat_ids.map((id, i) => h(
        'div',
        { class: 'field' },
        h('label', { for: `attendee-${i}` }, `Name for ${id}`),
        h('input', { id: `attendee-${i}`, class: 'attendee', type: 'text', maxlength: '64', autocomplete: i === 0 ? 'name' : 'off', required }),
      )),
    );
  }

  // The names typed: one per seat, or none when the event lets them come later.
  attendees() {
    const typed = [...this.el.querySelectorAll('input.attendee')].map((i) => i.value.trim());
    return typed.every((n) => n === '') ? [] : typed;
  }

  async release() {
    try {
      const path = `/v1/holds/${this.holdData.hold_id}`;
      await write(path, { method: 'DELETE', token: this.buyer.token, dpop: proving('DELETE', path) });
    } catch (e) {
      if (!(e instanceof ApiError) || !['hold_not_active', 'hold_not_found'].includes(e.code)) return fill(this.payMsg, notice('error', e.message));
    }
    store.set('session', this.key, null);
    await this.showPicker(notice('info', 'You released the seats. They are back on sale.'));
    focusOn(this.el.querySelector('h2'));
  }

  // --- paying ---------------------------------------------------------------------

  async pay(method) {
    const hold = this.holdData;
    const btn = this.el.querySelector('#pay');
    btn.disabled = true;
    this.paying = true;
    fill(this.payMsg, notice('info', 'Paying\u2026 do not close this page.'));
    try {
      const path = `/v1/holds/${hold.hold_id}/checkout`;
      const { status, data } = await write(path, {
        method: 'POST',
        dpop: proving('POST', path),
        token: this.buyer.token,
        idem: hold.pay_key,
        body: { payment_method: method, attendees: this.attendees() },
      });
      if (status === 201) return this.done(data);
      await this.pending(data);
    } catch (e) {
      this.paying = false;
      btn.disabled = false;
      await this.payRefused(e);
    }
  }

  async payRefused(e) {
    // A new attempt (another card) is a new request.
    this.holdData.pay_key = newKey();
    store.set('session', this.key, { hold_id: this.holdData.hold_id, pay_key: this.holdData.pay_key });
    if (e instanceof ApiError && ['hold_expired', 'hold_not_active', 'hold_not_found', 'seat_sold'].includes(e.code)) {
      store.set('session', this.key, null);
      return this.showPicker(notice('warn', e.message));
    }
    let still = false;
    try {
      const { data } = await api(`/v1/holds/${this.holdData.hold_id}`, { token: this.buyer.token });
      still = data.status === 'held';
    } catch {
      still = false;
    }
    if (!still) {
      store.set('session', this.key, null);
      return this.showPicker(notice('error', `${e.message} Your seats were released; pick again.`));
    }
    fill(this.payMsg, notice('error', h('strong', {}, e.message), ' Your seats are still held: choose another way to pay.'));
    focusOn(this.payMsg.firstChild);
  }

  async pending(data) {
    const order = data.order;
    const action = data.next_action;
    const bank = action?.type === 'redirect_to_url' && action.url;
    const reachable = bank && !new URL(action.url, location.href).hostname.endsWith('.invalid');
    fill(
      this.payMsg,
      notice(
        'warn',
        h('p', {}, h('strong', {}, 'Payment not confirmed yet. '), order.message || 'We are waiting for the payment provider.'),
        bank
          ? reachable
            ? h('p', {}, 'Your bank asks you to confirm this payment: ', h('a', { href: action.url, target: '_blank', rel: 'noopener' }, 'confirm at your bank (opens a new tab)'), '. Your seats stay held meanwhile, and this page updates by itself when it is done.')
            : h('p', {}, 'Your bank asks you to confirm this payment. This demo\u2019s test provider has no bank page to show; the payment stays pending until the provider settles it.')
          : h('p', {}, 'Your seats stay held while we wait, and you will not be charged twice. This page updates by itself.'),
        h('p', { class: 'hint', id: 'order-state' }, `Order ${order.order_id}: ${order.status.replaceAll('_', ' ')}`),
      ),
    );
    // Follow the order until it settles.
    await this.pollUntil(async () => {
      try {
        const { data: o } = await api(`/v1/orders/${order.order_id}`, { token: this.buyer.token });
        const state = this.payMsg.querySelector('#order-state');
        if (state) state.textContent = `Order ${o.order_id}: ${o.status.replaceAll('_', ' ')} \u2014 ${o.message}`;
        if (o.status === 'confirmed') {
          this.done(o);
          return true;
        }
        if (!PENDING.has(o.status)) {
          this.paying = false;
          store.set('session', this.key, null);
          // Returned, not awaited: a picker that fails ends the poll, not taken for a failed read.
          return this.showPicker(notice('error', `The payment did not go through: ${o.message}`)).then(() => true);
        }
      } catch {
        /* keep waiting: the order is safe on the server */
      }
      return false;
    });
  }

  done(order) {
    this.stop();
    store.set('session', this.key, null);
    store.set('session', `queue.${this.ev.event_id}`, null);
    fill(
      this.el,
      h('h2', { id: 'shop-title' }, 'You have your tickets'),
      notice('ok', h('p', {}, h('strong', {}, 'Payment confirmed. '), order.message)),
      h('ul', { class: 'picks tickets' }, (order.tickets.length ? order.tickets : order.seat_ids.map((s) => ({ seat_id: s }))).map((t) => h('li', {}, h('span', {}, t.seat_id), t.ticket_id ? h('span', { class: 'mono' }, `Ticket ${t.ticket_id}`) : null))),
      h('p', { class: 'total' }, 'Paid: ', h('strong', {}, money(order.total, order.currency))),
      h('p', {}, h('a', { href: '#/orders' }, 'See all my orders')),
    );
    announce('Payment confirmed. You have your tickets.');
    focusOn(this.el.querySelector('h2'));
  }
}
