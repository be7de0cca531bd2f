// The operator console: the operator key (typed once, kept in this tab's
// sessionStorage, never in a URL), the events, a new event from a template or a JSON
// spec, one event's sale (open, close, fairness, admission, waiting-room rules, live
// dashboard), and the audit. Pages: #/ (events), #/new, #/events/ID, #/audit.
import { api, isRefusal, newKey, write } from './api.js';
import { Dashboard, REASONS } from './dashboard.js';
import { TEMPLATES, defaultRate, specFrom } from './templates.js';
import { announce, fill, focusOn, h, notice, store } from './ui.js';

const main = document.getElementById('main');
const forget = document.getElementById('forget');
let current = [];

const STATUS = { scheduled: 'Scheduled', open: 'On sale', closed: 'Closed' };

function key() {
  return store.get('session', 'operator_key');
}

forget.addEventListener('click', () => {
  store.set('session', 'operator_key', null);
  location.hash = '#/';
  show();
});

function route() {
  const hash = location.hash.replace(/^#\/?/, '');
  const m = /^events\/(\d+)/.exec(hash);
  if (m) return { page: 'event', id: Number(m[1]) };
  if (hash === 'new') return { page: 'new' };
  if (hash === 'audit') return { page: 'audit' };
  return { page: 'events' };
}

async function show() {
  for (const c of current) c.stop?.();
  current = [];
  const r = route();
  for (const a of document.querySelectorAll('nav a')) a.toggleAttribute('aria-current', a.dataset.page === r.page);
  forget.hidden = !key();
  if (!key()) {
    signIn();
    return;
  }
  const pages = { events: eventsPage, new: newPage, event: eventPage, audit: auditPage };
  await pages[r.page](r);
}

function signIn(message) {
  const input = h('input', { type: 'password', id: 'key', name: 'key', autocomplete: 'off', required: true, 'aria-describedby': 'key-hint' });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Operator sign-in'),
    message ? notice('error', message) : null,
    h('div', { class: 'field' }, h('label', { for: 'key' }, 'Operator key'), input),
    h('p', { class: 'hint', id: 'key-hint' }, 'The key the server printed at start-up (or set in its configuration). It stays in this tab only and is forgotten when the tab closes.'),
    h('div', { class: 'actions' }, h('button', { class: 'primary', type: 'submit' }, 'Use this key')),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const k = input.value.trim();
    if (!k) return;
    const check = await keyCheck(k);
    if (check !== 'accepted') {
      signIn(check === 'refused' ? 'That key was not accepted.' : `The key could not be checked: ${check} Try again in a moment.`);
      return;
    }
    store.set('session', 'operator_key', k);
    announce('Signed in.');
    show();
  });
  fill(main, form);
  setTimeout(() => input.focus());
}

/** Whether the server takes `k` as the operator key, asked with a read only the operator
 *  may make (whether or not any event exists): 'accepted', 'refused' (401 or 403), or
 *  what kept the question from an answer (the server busy, the network down), which
 *  neither accepts nor refuses the key. */
async function keyCheck(k) {
  try {
    await api('/v1/webhook-endpoints', { token: k });
    return 'accepted';
  } catch (e) {
    if (isRefusal(e)) return 'refused';
    return e.message;
  }
}

/** The server refused the key in use: forget it, stop everything that polls with it (the
 *  dashboard), and ask for a key again. */
function keyRefused() {
  store.set('session', 'operator_key', null);
  for (const c of current) c.stop?.();
  current = [];
  forget.hidden = true;
  signIn('The server no longer accepts that key.');
}

/** A call with the operator key; a refused key sends the operator back to sign in. */
async function op(path, opts = {}) {
  try {
    return await (opts.method && opts.method !== 'GET' && opts.idem !== false ? write(path, { ...opts, token: key() }) : api(path, { ...opts, token: key() }));
  } catch (e) {
    if (isRefusal(e) && key()) keyRefused();
    throw e;
  }
}

function date(ms) {
  return ms ? new Date(ms).toLocaleString() : '\u2013';
}

async function eventsPage() {
  const el = h('section', { class: 'card', 'aria-labelledby': 'events-title' }, h('h1', { id: 'events-title' }, 'Events'), h('p', {}, 'Loading\u2026'));
  fill(main, el);
  try {
    const { data } = await api('/v1/events?limit=100');
    const rows = data.events.map((e) =>
      h(
        'tr',
        {},
        h('td', {}, h('a', { href: `#/events/${e.event_id}` }, e.name), e.venue ? h('div', { class: 'hint' }, e.venue) : null),
        h('td', {}, h('span', { class: `badge badge-${e.status}` }, STATUS[e.status] || e.status)),
        h('td', { class: 'num' }, e.counts ? `${e.counts.sold.toLocaleString()} / ${e.capacity.toLocaleString()}` : `\u2013 / ${e.capacity.toLocaleString()}`),
        h('td', {}, date(e.opens_at)),
      ),
    );
    fill(
      el,
      h('h1', { id: 'events-title' }, 'Events'),
      h('div', { class: 'actions' }, h('a', { href: '#/new' }, 'Create an event')),
      rows.length
        ? h('table', { class: 'events' }, h('caption', { class: 'visually-hidden' }, 'Events, newest first'), h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Event'), h('th', { scope: 'col' }, 'Sale'), h('th', { scope: 'col', class: 'num' }, 'Sold / capacity'), h('th', { scope: 'col' }, 'Announced opening'))), h('tbody', {}, rows))
        : h('p', {}, 'No events yet.'),
    );
  } catch (e) {
    fill(el, h('h1', { id: 'events-title' }, 'Events'), notice('error', e.message));
  }
  focusOn(el.querySelector('h1'));
}

/** A labelled input with a slot for its error; returns [wrapper, input, error]. */
function field(id, label, input, hint) {
  const err = h('p', { class: 'field-error', id: `${id}-error`, hidden: true });
  input.id = id;
  input.name = id;
  input.setAttribute('aria-describedby', [hint ? `${id}-hint` : null, `${id}-error`].filter(Boolean).join(' '));
  return [h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null, err), input, err];
}

function newPage() {
  const fields = {};
  const add = (id, label, input, hint) => {
    const [wrap, el, err] = field(id, label, input, hint);
    fields[id] = { el, err };
    return wrap;
  };
  const radios = Object.entries(TEMPLATES).map(([k, t], i) =>
    h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'template', value: k, checked: i === 0 }), h('span', {}, t.label)),
  );
  radios.push(h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'template', value: 'json' }), h('span', {}, 'A JSON spec of my own')));
  const json = h('textarea', { spellcheck: 'false' });
  const jsonWrap = add('spec', 'Event spec (JSON)', json, 'As POST /v1/events takes it; the template you picked last is filled in to start from.');
  jsonWrap.hidden = true;
  const formProblem = h('div');
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'new-title', novalidate: true },
    h('h1', { id: 'new-title' }, 'Create an event'),
    h('fieldset', {}, h('legend', {}, 'Start from'), radios),
    h(
      'div',
      { class: 'form-grid' },
      add('name', 'Event name', h('input', { type: 'text', required: true, maxlength: 200 })),
      add('venue', 'Venue', h('input', { type: 'text', maxlength: 200 }), 'Shown to buyers on the event page.'),
      add('opens', 'Announced opening (your local time)', h('input', { type: 'datetime-local' }), 'Buyers see a countdown to it; you still open the sale yourself.'),
      add('rate', 'Admission rate (buyers per second)', h('input', { type: 'number', min: 1, max: 1000000, step: 1 })),
      add('max', 'Tickets per buyer', h('input', { type: 'number', min: 1, max: 20, step: 1, value: 4 })),
    ),
    jsonWrap,
    formProblem,
    h('div', { class: 'actions' }, h('button', { class: 'primary', type: 'submit' }, 'Create the event')),
  );
  const template = () => form.querySelector('input[name=template]:checked').value;
  let lastTemplate = 'stadium';
  fields.rate.el.value = defaultRate('stadium');
  form.addEventListener('change', (e) => {
    if (e.target.name !== 'template') return;
    const t = template();
    const isJson = t === 'json';
    jsonWrap.hidden = !isJson;
    for (const id of ['rate', 'max']) fields[id].el.closest('.field').hidden = isJson;
    if (isJson) {
      json.value = JSON.stringify(specFrom(lastTemplate, answers()), null, 2);
    } else {
      lastTemplate = t;
      fields.rate.el.value = defaultRate(t);
    }
  });
  const answers = () => {
    const opens = fields.opens.el.value ? new Date(fields.opens.el.value).getTime() : null;
    return {
      name: fields.name.el.value.trim(),
      venue: fields.venue.el.value.trim(),
      opensAt: Number.isFinite(opens) ? opens : null,
      rate: Number(fields.rate.el.value) || undefined,
      maxPerBuyer: Number(fields.max.el.value) || 4,
    };
  };
  const showError = (id, text) => {
    const f = fields[id];
    f.err.textContent = text;
    f.err.hidden = false;
    f.el.setAttribute('aria-invalid', 'true');
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    for (const f of Object.values(fields)) {
      f.err.hidden = true;
      f.el.removeAttribute('aria-invalid');
    }
    formProblem.replaceChildren();
    let spec;
    const a = answers();
    if (template() === 'json') {
      try {
        spec = JSON.parse(json.value);
      } catch (err) {
        showError('spec', `This is not valid JSON: ${err.message}`);
        fields.spec.el.focus();
        return;
      }
    } else {
      if (!a.name) showError('name', 'Give the event a name.');
      if (!(a.rate >= 1)) showError('rate', 'The rate must be at least 1 buyer per second.');
      if (!(a.maxPerBuyer >= 1 && a.maxPerBuyer <= 20)) showError('max', 'Between 1 and 20 tickets.');
      const bad = form.querySelector('[aria-invalid=true]');
      if (bad) {
        bad.focus();
        return;
      }
      spec = specFrom(template(), a);
    }
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const { data } = await op('/v1/events', { method: 'POST', body: spec, idem: newKey() });
      announce(`Event ${data.name} created.`);
      location.hash = `#/events/${data.event_id}`;
    } catch (err) {
      button.disabled = false;
      const id = fieldOf(err.detail || err.message, template() === 'json');
      if (id && fields[id]) {
        showError(id, err.detail || err.message);
        fields[id].el.focus();
      } else {
        formProblem.replaceChildren(notice('error', err.detail || err.message));
      }
    }
  });
  fill(main, form);
  focusOn(form.querySelector('h1'));
}

/** Which field a refusal of the spec is about, by the words the server uses. */
function fieldOf(text, isJson) {
  if (isJson) return 'spec';
  if (/venue/i.test(text)) return 'venue';
  if (/event name/i.test(text)) return 'name';
  if (/admission_rate/i.test(text)) return 'rate';
  if (/max_tickets_per_buyer/i.test(text)) return 'max';
  return null;
}

async function eventPage({ id }) {
  let ev;
  try {
    ({ data: ev } = await api(`/v1/events/${id}`));
  } catch (e) {
    fill(main, h('section', { class: 'card' }, h('h1', {}, `Event ${id}`), notice('error', e.message)));
    return;
  }
  document.title = `${ev.name} \u2014 Console`;
  const status = h('p', { class: 'status' });
  const saleActions = h('div', { class: 'actions' });
  const saleProblem = h('div');
  const fairness = h('div');
  const setStatus = (s) => {
    ev.status = s;
    fill(status, 'Sale: ', h('span', { class: `badge badge-${s}` }, STATUS[s] || s));
    fill(
      saleActions,
      s === 'scheduled' ? h('button', { class: 'primary', type: 'button', onclick: () => change('open') }, 'Open the sale') : null,
      s === 'open' ? h('button', { class: 'secondary', type: 'button', onclick: () => change('close') }, 'Close the sale') : null,
      h('a', { href: `/#/events/${id}`, target: '_blank', rel: 'noopener' }, 'The buyers\u2019 page'),
    );
  };
  const change = async (what) => {
    if (what === 'close' && !confirm('Close the sale? Buyers can no longer hold or buy, and it cannot be reopened.')) return;
    saleProblem.replaceChildren();
    try {
      const { data } = await op(`/v1/events/${id}/${what}`, { method: 'POST', idem: newKey() });
      setStatus(data.status);
      announce(what === 'open' ? 'The sale is open.' : 'The sale is closed.');
      loadFairness();
    } catch (e) {
      saleProblem.replaceChildren(notice('error', e.message));
    }
  };
  let seedShown = false;
  const loadFairness = async () => {
    try {
      const { data } = await api(`/v1/events/${id}/queue/fairness?limit=1`);
      seedShown = Boolean(data.seed);
      fill(
        fairness,
        h('h3', {}, 'Fairness'),
        h('p', {}, `Everyone who joins before opening is placed in a random order drawn from a seed. Its commitment (SHA-256 of the seed) is public before opening; the seed is shown once the order is drawn, so anyone can check it (${data.algorithm}).`),
        h('dl', {}, h('dt', {}, 'Commitment'), h('dd', { class: 'mono', id: 'commitment' }, data.commitment), h('dt', {}, 'Seed'), h('dd', { class: 'mono', id: 'seed' }, data.seed || 'Not revealed yet: it is revealed when the sale opens and the early line is placed.'), h('dt', {}, 'Joined before opening'), h('dd', {}, `${data.pool_size.toLocaleString()}${data.placed ? ', placed' : ''}`)),
      );
    } catch (e) {
      fill(fairness, notice('warn', `The fairness record could not be read: ${e.message}`));
    }
  };
  setStatus(ev.status);
  loadFairness();

  const admission = admissionForm(id, ev);
  const rules = rulesForm(id);
  const dash = new Dashboard({
    eventId: id,
    token: key(),
    onRefused: keyRefused,
    onData: (d) => {
      if (d.status !== ev.status) setStatus(d.status);
      // The seed is revealed once the early line is placed, a moment after opening.
      if (d.queue.placed && !seedShown) {
        seedShown = true;
        loadFairness();
      }
      admission.update(d);
      rules.update(d);
    },
  });
  current.push(dash);
  fill(
    main,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'event-title' },
      h('h1', { id: 'event-title' }, ev.name),
      h('p', { class: 'hint' }, [ev.venue, `${ev.capacity.toLocaleString()} places`, ev.opens_at ? `announced to open ${date(ev.opens_at)}` : null].filter(Boolean).join(' \u00b7 ')),
      status,
      saleActions,
      saleProblem,
      fairness,
    ),
    dash.el,
    h('div', { class: 'console-grid' }, admission.el, rules.el),
    signalsCard(id),
  );
  dash.start();
  focusOn(main.querySelector('h1'));
}

const DIMENSIONS = { device: 'Device key', network: 'Network', card: 'Payment method' };

// The event's largest buyer clusters (GET /v1/events/{id}/signals), read on demand.
function signalsCard(id) {
  const body = h('div', { role: 'status' });
  const load = async () => {
    fill(body, h('p', {}, 'Reading the clusters\u2026'));
    try {
      const { data } = await op(`/v1/events/${id}/signals?limit=20`);
      if (!data.clusters.length) {
        fill(body, h('p', {}, 'No clusters: no checkout was counted, or the event sets no velocity rules.'));
        return;
      }
      const row = (c) => h('tr', {}, h('td', {}, DIMENSIONS[c.dimension] || c.dimension), h('td', { class: 'mono' }, c.key), h('td', {}, String(c.buyers)), h('td', {}, c.refusing ? 'Refusing' : c.flagged ? 'Flagged' : ''));
      const head = h('tr', {}, h('th', { scope: 'col' }, 'Seen by'), h('th', { scope: 'col' }, 'Key'), h('th', { scope: 'col' }, 'Buyers'), h('th', { scope: 'col' }, 'State'));
      fill(body, h('table', { id: 'signals' }, h('thead', {}, head), h('tbody', {}, ...data.clusters.map(row))));
    } catch (e) {
      fill(body, notice('warn', `The clusters could not be read: ${e.message}`));
    }
  };
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'signals-title' },
    h('h2', { id: 'signals-title' }, 'Buyer signals'),
    h('p', { class: 'hint' }, 'Distinct buyers per device key, client network and payment method, largest first, flagged or refusing by the event\u2019s velocity rules.'),
    h('div', { class: 'actions' }, h('button', { class: 'secondary', type: 'button', onclick: load }, 'Read the clusters')),
    body,
  );
}

function admissionForm(id, ev) {
  const mode = (v, label) => h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'mode', value: v }), h('span', {}, label));
  const rate = h('input', { type: 'number', id: 'adm-rate', min: 1, max: 1000000, step: 1, 'aria-describedby': 'adm-rate-hint' });
  const now = h('p', { role: 'status' });
  const problem = h('div');
  let touched = false;
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'adm-title' },
    h('h2', { id: 'adm-title' }, 'Admission'),
    now,
    h('fieldset', {}, h('legend', {}, 'Mode'), h('div', { class: 'modes' }, mode('fixed', 'Fixed rate'), mode('adaptive', 'Adaptive (narrows when holds, checkouts or payments suffer)'))),
    h('div', { class: 'field' }, h('label', { for: 'adm-rate' }, 'Rate (buyers per second)'), rate, h('p', { class: 'hint', id: 'adm-rate-hint' }, `The fixed rate, or the adaptive mode's ceiling. The event was created with ${ev.sale.admission_rate_per_s.toLocaleString()} per second.`)),
    problem,
    h('div', { class: 'actions' }, h('button', { class: 'primary', type: 'submit' }, 'Apply admission')),
  );
  form.addEventListener('input', () => {
    touched = true;
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    problem.replaceChildren();
    const body = { mode: form.querySelector('input[name=mode]:checked')?.value || 'fixed', rate_per_s: Number(rate.value) };
    if (!(body.rate_per_s >= 1)) {
      problem.replaceChildren(notice('error', 'The rate must be at least 1 buyer per second (close the sale to stop it).'));
      rate.focus();
      return;
    }
    try {
      const { data } = await op(`/v1/events/${id}/admission`, { method: 'PUT', body, idem: false });
      touched = false;
      problem.replaceChildren(notice('ok', `Applied: ${data.rate.rate_per_s.toLocaleString()} buyers per second (${REASONS[data.rate.reason] || data.rate.reason}).`));
      announce('Admission applied.');
    } catch (err) {
      problem.replaceChildren(notice('error', err.message));
    }
  });
  return {
    el: form,
    update(d) {
      now.textContent = `Now: ${d.rate.rate_per_s.toLocaleString()} buyers per second, ${REASONS[d.rate.reason] || d.rate.reason}.`;
      if (touched) return;
      form.querySelector(`input[name=mode][value=${d.control.mode}]`).checked = true;
      rate.value = d.control.rate_per_s ?? d.rate.rate_per_s;
    },
  };
}

// The human checks an event may ask, as the rules name them (hosted: by provider).
const CHECKS = {
  none: 'None',
  proof_of_work: 'Proof of work in the browser',
  turnstile: 'Cloudflare Turnstile',
  hcaptcha: 'hCaptcha',
  recaptcha: 'Google reCAPTCHA',
};

function rulesForm(id) {
  const verified = h('input', { type: 'checkbox', id: 'rule-verified' });
  const check = h(
    'select',
    { id: 'rule-check', 'aria-describedby': 'rule-check-hint' },
    Object.entries(CHECKS).map(([value, label]) => h('option', { value }, label)),
  );
  const whenDown = h('input', { type: 'checkbox', id: 'rule-open' });
  const pow = h('input', { type: 'number', id: 'rule-pow', min: 0, max: 24, step: 1, 'aria-describedby': 'rule-pow-hint' });
  const cap = h('input', { type: 'number', id: 'rule-cap', min: 1, step: 1, 'aria-describedby': 'rule-cap-hint' });
  const margin = h('input', { type: 'number', id: 'rule-margin', min: 0, step: 1, 'aria-describedby': 'rule-margin-hint' });
  const perSeat = h('input', { type: 'number', id: 'rule-per-seat', min: 1, step: 1, 'aria-describedby': 'rule-per-seat-hint' });
  const problem = h('div');
  let touched = false;
  let rulesNow = {};
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'rules-title' },
    h('h2', { id: 'rules-title' }, 'Waiting-room rules'),
    h('label', { class: 'radio' }, verified, h('span', {}, 'Only verified buyers may join')),
    h('div', { class: 'field' }, h('label', { for: 'rule-check' }, 'Human check at joining'), check, h('p', { class: 'hint', id: 'rule-check-hint' }, 'The proof of work runs in the buyer\u2019s browser; a hosted check needs the provider\u2019s keys in the server\u2019s configuration.')),
    h('label', { class: 'radio' }, whenDown, h('span', {}, 'Let buyers in while a hosted check cannot be verified')),
    h('div', { class: 'field' }, h('label', { for: 'rule-pow' }, 'Proof of work (leading zero bits, 0 for none)'), pow, h('p', { class: 'hint', id: 'rule-pow-hint' }, 'Each join costs the buyer\u2019s device this much work; 16 takes a phone about a second.')),
    h('div', { class: 'field' }, h('label', { for: 'rule-cap' }, 'Most active shoppers at once (empty for no cap)'), cap, h('p', { class: 'hint', id: 'rule-cap-hint' }, 'Admission waits while this many admitted buyers are still shopping.')),
    h('div', { class: 'field' }, h('label', { for: 'rule-per-seat' }, 'Buyers let in for each seat left (empty for no bound)'), perSeat, h('p', { class: 'hint', id: 'rule-per-seat-hint' }, 'When few seats are left, admission lets in no more buyers than this many for each seat neither sold nor held; the rest keep their place.')),
    h('div', { class: 'field' }, h('label', { for: 'rule-margin' }, 'Tell the line "sold out" when this few are left'), margin, h('p', { class: 'hint', id: 'rule-margin-hint' }, 'Seats neither sold nor held; 0 waits until none are left.')),
    problem,
    h('div', { class: 'actions' }, h('button', { class: 'primary', type: 'submit' }, 'Apply rules')),
  );
  form.addEventListener('input', () => {
    touched = true;
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    problem.replaceChildren();
    const kind = check.value;
    const hosted = kind !== 'none' && kind !== 'proof_of_work';
    const body = {
      ...rulesNow,
      require_verified: verified.checked,
      human_check: hosted ? { kind: 'hosted', provider: kind, when_down: whenDown.checked ? 'open' : 'closed' } : { kind },
      pow_difficulty: kind === 'proof_of_work' ? Number(pow.value) || 0 : 0,
      max_active_shoppers: cap.value === '' ? null : Number(cap.value),
      buyers_per_free_seat: perSeat.value === '' ? null : Number(perSeat.value),
      sold_out_margin: Number(margin.value) || 0,
    };
    try {
      await op(`/v1/events/${id}/waiting-room`, { method: 'PUT', body, idem: false });
      touched = false;
      problem.replaceChildren(notice('ok', 'The rules are in force.'));
      announce('Rules applied.');
    } catch (err) {
      problem.replaceChildren(notice('error', err.message));
    }
  });
  return {
    el: form,
    update(d) {
      rulesNow = d.rules;
      if (touched) return;
      verified.checked = d.rules.require_verified;
      const hc = d.rules.human_check ?? { kind: d.rules.pow_difficulty > 0 ? 'proof_of_work' : 'none' };
      check.value = hc.kind === 'hosted' ? hc.provider : hc.kind;
      whenDown.checked = hc.when_down === 'open';
      pow.value = d.rules.pow_difficulty;
      cap.value = d.rules.max_active_shoppers ?? '';
      perSeat.value = d.rules.buyers_per_free_seat ?? '';
      margin.value = d.rules.sold_out_margin;
    },
  };
}

function auditPage() {
  const result = h('div', { 'aria-live': 'polite' });
  const button = h('button', { class: 'primary', type: 'button' }, 'Run the audit');
  button.addEventListener('click', async () => {
    button.disabled = true;
    fill(result, h('p', {}, 'Auditing the ledger\u2026'));
    try {
      const { data } = await op('/v1/audit');
      fill(
        result,
        notice(data.clean ? 'ok' : 'error', h('p', {}, h('strong', {}, data.clean ? 'Clean.' : 'Violations found.'), ' ', data.summary)),
        data.report.violations.length ? h('ul', {}, data.report.violations.map((v) => h('li', {}, h('strong', {}, v.promise), ': ', v.detail))) : null,
        h('p', { class: 'hint' }, `Run at ${new Date().toLocaleTimeString()}.`),
      );
    } catch (e) {
      fill(result, notice('error', e.message));
    } finally {
      setTimeout(() => {
        button.disabled = false;
      }, 1000);
    }
  });
  fill(
    main,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'audit-title' },
      h('h1', { id: 'audit-title' }, 'Audit'),
      h('p', {}, 'Checks the whole ledger against the promises: no seat sold twice and none over capacity, no charge without a ticket and no ticket without a charge (against the payment provider\u2019s book), every buyer within the ticket limit. The same check as `boxoffice audit`.'),
      h('div', { class: 'actions' }, button),
      result,
    ),
  );
  focusOn(main.querySelector('h1'));
}

window.addEventListener('hashchange', show);
show();
