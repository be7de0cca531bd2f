// The waiting room: join (solving the proof of work in a Web Worker when the event asks
// for one, or drawing a hosted human-check widget and sending its token), then follow the line live over the public stream, asking for our own
// standing at the suggested pace with jitter (and at once when the stream says our
// turn has come) until the admission token arrives. The queue ticket is kept in
// sessionStorage, so a reload picks up the same place in line.
import { ApiError, api, write } from './api.js';
import { proving } from './pop.js';
import { announce, duration, focusOn, h, fill, notice, store } from './ui.js';

// Hosted human-check widgets: where each provider's script is, and its global. The page
// allows these origins only when loaded as `/?check=<provider>` (see showWidget).
const WIDGETS = {
  turnstile: { src: 'https://challenges.cloudflare.com/turnstile/v0/api.js?render=explicit', global: 'turnstile' },
  hcaptcha: { src: 'https://js.hcaptcha.com/1/api.js?render=explicit', global: 'hcaptcha' },
  recaptcha: { src: 'https://www.google.com/recaptcha/api.js?render=explicit', global: 'grecaptcha' },
};

// Refusals after which the buyer solves the widget again.
const WIDGET_AGAIN = new Set(['human_check_required', 'human_check_failed', 'human_check_reused']);

function loadWidget(w) {
  const ready = window[w.global];
  if (ready?.render) return Promise.resolve(ready);
  return new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = w.src;
    s.async = true;
    s.onload = () => {
      const g = window[w.global];
      if (!g) reject(new Error('The check could not load. Reload the page.'));
      else if (w.global === 'grecaptcha') g.ready(() => resolve(g));
      else resolve(g);
    };
    s.onerror = () => reject(new Error('The check could not load. Reload the page.'));
    document.head.append(s);
  });
}

export class WaitingRoom {
  constructor({ eventId, buyer, onAdmitted }) {
    this.eventId = eventId;
    this.buyer = buyer;
    this.onAdmitted = onAdmitted;
    this.key = `queue.${eventId}`;
    this.el = h('section', { class: 'card waiting', 'aria-labelledby': 'waiting-title' });
    this.status = null;
    this.publicDoc = null;
  }

  get saved() {
    return store.get('session', this.key);
  }

  set saved(v) {
    store.set('session', this.key, v);
  }

  start() {
    const saved = this.saved;
    if (saved?.admission && saved.admission_expires_at > Date.now()) {
      this.admitted(saved);
    } else if (saved?.ticket) {
      this.showWaiting();
      this.follow();
    } else {
      this.showJoin();
    }
    return this.el;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.stream?.close();
    this.worker?.terminate();
  }

  showJoin(message) {
    fill(
      this.el,
      h('h2', { id: 'waiting-title' }, 'The line'),
      message || null,
      h('p', {}, 'Everyone buys through the line, in the order they joined. Keep this page open; you can reload it without losing your place.'),
      h('button', { type: 'button', class: 'primary', id: 'join', onclick: () => this.begin() }, 'Join the line'),
    );
  }

  // Joins, first drawing the widget when the event asks a hosted human check.
  async begin() {
    try {
      const { data } = await api(`/v1/events/${this.eventId}/queue`);
      this.publicDoc = data;
    } catch {
      // Without the document the join itself says what it needs.
    }
    if (this.publicDoc?.human_check?.kind === 'hosted') return this.showWidget();
    return this.join();
  }

  async join(answer) {
    const btn = this.el.querySelector('#join');
    if (btn) btn.disabled = true;
    try {
      const path = `/v1/events/${this.eventId}/queue`;
      const { data } = await write(path, { method: 'POST', token: this.buyer.token, body: answer || {}, dpop: proving('POST', path) });
      this.saved = { ticket: data.queue_ticket, joined_at: Date.now() };
      this.status = data;
      announce('You joined the line.');
      this.showWaiting();
      focusOn(this.el.querySelector('h2'));
      this.follow();
    } catch (e) {
      if (e instanceof ApiError && e.code === 'pow_required' && !answer) return this.solveThenJoin();
      if (e instanceof ApiError && WIDGET_AGAIN.has(e.code) && this.publicDoc?.human_check?.kind === 'hosted') {
        return this.showWidget(notice('error', e.message));
      }
      this.showJoin(notice('error', e.message));
    }
  }

  async solveThenJoin() {
    const progress = h('progress', { max: '100', value: '0', 'aria-label': 'Browser check progress' });
    const text = h('p', { 'aria-live': 'polite' }, 'Starting\u2026');
    fill(this.el, h('h2', { id: 'waiting-title' }, 'The line'), h('p', {}, 'Before you join, your browser does a short piece of work that keeps ticket bots out. It takes a few seconds.'), progress, text);
    try {
      const { data: c } = await api(`/v1/events/${this.eventId}/queue/challenge`, { token: this.buyer.token });
      const expected = 2 ** c.difficulty;
      this.worker = new Worker(import.meta.resolve('./pow-worker.js'), { type: 'module' });
      const found = await new Promise((resolve, reject) => {
        this.worker.onmessage = (m) => {
          const pct = Math.min(99, Math.round((100 * m.data.tried) / expected));
          progress.value = pct;
          text.textContent = m.data.nonce ? 'Done.' : `Working: about ${pct}% (${m.data.tried.toLocaleString()} tries)`;
          if (m.data.nonce) resolve(m.data.nonce);
        };
        this.worker.onerror = () => reject(new Error('The browser check could not run. Reload the page.'));
        this.worker.postMessage({ challenge: c.challenge, difficulty: c.difficulty });
      });
      this.worker.terminate();
      progress.value = 100;
      await this.join({ pow: { challenge: c.challenge, nonce: found } });
    } catch (e) {
      this.showJoin(notice('error', e.message));
    }
  }

  // The provider's widget; its token joins. The page's policy allows the provider's
  // script only when the page was loaded for it, so the first time it reloads itself as
  // /?check=<provider>, at the same place in the app.
  async showWidget(message) {
    const check = this.publicDoc?.human_check;
    const w = WIDGETS[check?.provider];
    if (!w || !check.site_key) {
      this.showJoin(notice('error', 'This sale asks for a check this box office cannot show right now. Try again later.'));
      return;
    }
    if (new URLSearchParams(location.search).get('check') !== check.provider) {
      location.replace(`/?check=${check.provider}${location.hash}`);
      return;
    }
    const box = h('div', { class: 'human-check' });
    fill(
      this.el,
      h('h2', { id: 'waiting-title' }, 'The line'),
      message || null,
      h('p', {}, 'Before you join, please confirm that you are a person. You join as soon as the check is done.'),
      box,
    );
    try {
      const widget = await loadWidget(w);
      widget.render(box, { sitekey: check.site_key, callback: (token) => this.join({ human_check_token: token }) });
    } catch (e) {
      this.showJoin(notice('error', e.message));
    }
  }

  showWaiting() {
    this.line = h('div', { class: 'line-state', 'aria-live': 'polite' });
    this.liveNote = h('p', { class: 'hint' });
    fill(this.el, h('h2', { id: 'waiting-title' }, 'You are in the line'), this.line, this.liveNote);
    this.render();
  }

  render() {
    if (!this.line) return;
    const s = this.status;
    const d = this.publicDoc;
    if (s?.status === 'sold_out' || d?.sold_out) {
      fill(this.line, notice('warn', h('strong', {}, 'Sold out. '), 'Every ticket has been sold or is held by buyers ahead of you. If held seats are released, the line may move again.'));
      return;
    }
    const pos = s?.position ?? null;
    let wait = s?.estimated_wait_s ?? null;
    if (pos !== null && d?.admission_rate_per_s) wait = Math.max(0, Math.ceil((pos - d.serving_up_to) / d.admission_rate_per_s));
    const ahead = pos !== null && d ? Math.max(0, pos - d.serving_up_to) : null;
    fill(
      this.line,
      pos === null
        ? h('p', {}, 'The sale has not opened yet. Your place will be drawn when it opens.')
        : h('p', { class: 'position' }, 'Your place: ', h('strong', { id: 'position' }, `#${pos.toLocaleString()}`), ahead !== null ? ` (${ahead.toLocaleString()} ahead of you)` : ''),
      wait !== null ? h('p', {}, 'Estimated wait: ', h('strong', {}, wait <= 1 ? 'any moment now' : `about ${duration(wait)}`)) : null,
      d ? h('p', { class: 'hint' }, `${d.queue_length.toLocaleString()} people in the line; ${d.admission_rate_per_s.toLocaleString()} let in per second.`) : null,
    );
  }

  follow() {
    this.stopped = false;
    this.openStream();
    this.poll();
  }

  openStream() {
    if (typeof EventSource === 'undefined') return;
    this.stream = new EventSource(`/v1/events/${this.eventId}/queue/stream`);
    this.stream.addEventListener('queue', (m) => {
      try {
        this.publicDoc = JSON.parse(m.data);
      } catch {
        return;
      }
      if (this.liveNote) this.liveNote.textContent = 'Live: this page updates by itself.';
      this.render();
      const pos = this.status?.position;
      if (this.publicDoc.sold_out || (pos != null && pos <= this.publicDoc.serving_up_to)) this.pollSoon(0);
    });
    this.stream.onerror = () => {
      if (this.liveNote) this.liveNote.textContent = 'Live updates paused; checking your place every few seconds.';
    };
  }

  pollSoon(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.poll(), ms);
  }

  async poll() {
    if (this.stopped) return;
    const saved = this.saved;
    if (!saved?.ticket) return;
    let next = 3000;
    try {
      const { data } = await api('/v1/queue/status', { token: saved.ticket });
      this.status = data;
      if (data.queue_ticket) this.saved = { ...saved, ticket: data.queue_ticket };
      if (data.admission_token) {
        this.admitted({ ...this.saved, admission: data.admission_token, admission_expires_at: data.admission_expires_at, admitted_at: Date.now() });
        return;
      }
      this.render();
      next = data.poll_after_ms || next;
    } catch (e) {
      if (e instanceof ApiError && ['admission_expired', 'token_expired', 'invalid_token', 'token_unknown_key', 'event_not_found'].includes(e.code)) {
        this.stop();
        this.saved = null;
        this.showJoin(notice('warn', e.message));
        return;
      }
      next = Math.max(next, e.retryAfterS * 1000);
      if (this.liveNote) this.liveNote.textContent = `${e.message} Still trying.`;
    }
    // Jitter, so a line of thousands does not ask in step.
    this.pollSoon(next * (0.75 + Math.random() * 0.5));
  }

  admitted(saved) {
    this.stop();
    this.saved = saved;
    const at = new Date(saved.admitted_at || Date.now());
    const until = new Date(saved.admission_expires_at);
    fill(
      this.el,
      h('h2', { id: 'waiting-title' }, 'It\u2019s your turn'),
      notice('ok', `You were let in at ${at.toLocaleTimeString()}. Pick your seats before ${until.toLocaleTimeString()}.`),
    );
    announce('It is your turn. Pick your seats.');
    this.onAdmitted(saved.admission);
  }

  /** Our turn ran out (a hold was refused with admission_expired): back to the start. */
  expire(message) {
    this.saved = null;
    this.showJoin(notice('warn', message));
  }
}

