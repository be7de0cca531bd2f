// Small DOM helpers: building elements without HTML strings (nothing is parsed, so no
// markup can be injected), money, durations, and the screen-reader announcer.

/** h('button', {class: 'x', onclick: f}, 'text', child...) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  for (const c of children.flat()) if (c) el.append(c instanceof Node ? c : String(c));
  return el;
}

const formats = new Map();
/** 12345 cents, 'EUR' → "€123.45" */
export function money(cents, currency) {
  let f = formats.get(currency);
  if (!f) {
    try {
      f = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    } catch {
      f = { format: (v) => `${v.toFixed(2)} ${currency}` };
    }
    formats.set(currency, f);
  }
  return f.format(cents / 100);
}

/** 75 → "1 min 15 s" */
export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** "m:ss" for a countdown. */
export function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

let announcer;
/** Says something to screen-reader users without moving their focus. */
export function announce(text) {
  announcer ||= document.getElementById('announcer');
  if (!announcer) return;
  announcer.textContent = '';
  setTimeout(() => {
    announcer.textContent = text;
  }, 50);
}

/** A notice box: kind is 'info', 'ok', 'warn' or 'error'. */
export function notice(kind, ...children) {
  return h('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, ...children);
}

/** Moves focus to a heading or region after a change of stage, for keyboard users. */
export function focusOn(el) {
  if (!el) return;
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus({ preventScroll: false });
}

/** Persistent values: `local` for the buyer, `session` for this tab's place in line. */
export const store = {
  get(area, key) {
    try {
      const v = (area === 'local' ? localStorage : sessionStorage).getItem(`boxoffice.${key}`);
      return v ? JSON.parse(v) : null;
    } catch {
      return null;
    }
  },
  set(area, key, value) {
    try {
      const s = area === 'local' ? localStorage : sessionStorage;
      if (value === null || value === undefined) s.removeItem(`boxoffice.${key}`);
      else s.setItem(`boxoffice.${key}`, JSON.stringify(value));
    } catch {
      /* storage may be full or disabled: the app still works for this page view */
    }
  },
};
