// The box office API as the app calls it: JSON in and out, bearer tokens, an
// Idempotency-Key on every write (kept across retries of the same write), refusals
// turned into ApiError with a message in plain words.
import { messageFor } from './errors.js';

export class ApiError extends Error {
  constructor(status, code, retryAfterS, detail) {
    super(messageFor(code));
    this.status = status;
    this.code = code;
    this.retryAfterS = retryAfterS;
    /** The server's own words (which field, which limit), for the operator's forms. */
    this.detail = detail;
  }
}

/** Whether `e` is the server refusing the credential sent (401 or 403). */
export function isRefusal(e) {
  return e instanceof ApiError && (e.status === 401 || e.status === 403);
}

/** How far the server's clock is ahead of ours, in ms (from the Date header). */
export let clockSkewMs = 0;

/** A fresh secret key: two random UUIDs. */
export function newKey() {
  return crypto.randomUUID() + crypto.randomUUID().slice(0, 8);
}

/**
 * One call. `idem` makes it a write that may be retried with the same key; `dpop`, a
 * function answering a proof of possession (pop.js), is called for every attempt.
 */
export async function api(path, { method = 'GET', token, body, idem, headers = {}, dpop } = {}) {
  const h = { ...headers };
  const proof = dpop ? await dpop() : null;
  if (proof) h.DPoP = proof;
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  if (idem) h['Idempotency-Key'] = idem;
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'network', 0);
  }
  const date = Date.parse(res.headers.get('Date') || '');
  if (!Number.isNaN(date)) clockSkewMs = date - Date.now();
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const code = (data && data.error) || (res.status >= 500 ? 'unavailable' : 'invalid_request');
    throw new ApiError(res.status, code, Number(res.headers.get('Retry-After')) || 0, data?.message);
  }
  return { status: res.status, data };
}

const RETRIED = new Set(['network', 'overloaded', 'request_timeout', 'unavailable', 'shutting_down', 'request_in_progress']);

/** A write, retried with the same Idempotency-Key while the failure is passing. */
export async function write(path, opts, attempts = 3) {
  const idem = opts.idem || newKey();
  for (let i = 1; ; i++) {
    try {
      return await api(path, { ...opts, idem });
    } catch (e) {
      if (!(e instanceof ApiError) || !RETRIED.has(e.code) || i >= attempts) throw e;
      await sleep(Math.max(e.retryAfterS * 1000, 400 * i));
    }
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The server's "now" in ms since the epoch, as far as we can tell. */
export function serverNow() {
  return Date.now() + clockSkewMs;
}
