// Proof of possession (RFC 9449 DPoP): this browser's admission cannot be moved to
// another client. At the first join the app makes a key pair whose private half cannot
// be exported (WebCrypto, non-extractable): Ed25519 where the browser has it (the
// server checks it about seven times faster), else ECDSA P-256. It keeps the pair in
// IndexedDB, so a reload keeps the same key; the join sends a proof carrying the public
// half, which binds the queue ticket and the admission token to it (cnf.jkt). Every
// hold, checkout and release then carries a fresh proof: a JWS (typ dpop+jwt, alg
// EdDSA or ES256, the public key in its header) over the method, the path, the time
// and a unique id.
import { serverNow } from './api.js';

const DB = 'boxoffice-pop';
const STORE = 'keys';
const NAME = 'device';

let pending = null;

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function database() {
  const open = indexedDB.open(DB, 1);
  open.onupgradeneeded = () => open.result.createObjectStore(STORE);
  return request(open);
}

async function stored() {
  const db = await database();
  try {
    return await request(db.transaction(STORE).objectStore(STORE).get(NAME));
  } finally {
    db.close();
  }
}

async function keep(pair) {
  const db = await database();
  try {
    const tx = db.transaction(STORE, 'readwrite');
    tx.objectStore(STORE).put(pair, NAME);
    await new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

async function made() {
  let pair = null;
  try {
    pair = await stored();
  } catch {
    pair = null; // No IndexedDB (a private window in some browsers): a key for this page only.
  }
  if (pair?.privateKey && pair?.publicKey) return pair;
  pair = await generate();
  try {
    await keep(pair);
  } catch {
    // Kept in memory only: a reload makes a new key, and the line must be joined again.
  }
  return pair;
}

/** An Ed25519 pair where WebCrypto has the algorithm, else ECDSA P-256. */
async function generate() {
  try {
    return await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  } catch {
    return crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  }
}

/** This browser's key pair, made once; null where WebCrypto is unavailable. */
export function deviceKey() {
  if (!globalThis.crypto?.subtle) return Promise.resolve(null);
  pending ??= made().catch(() => null);
  return pending;
}

const text = new TextEncoder();

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const b64json = (v) => b64url(text.encode(JSON.stringify(v)));

/** A proof for one request (`method`, `path` without query), or null without a key. */
export async function proof(method, path) {
  const pair = await deviceKey();
  if (!pair) return null;
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
  const ed = pair.publicKey.algorithm.name === 'Ed25519';
  // The public members only (RFC 7638's), in the form the server hashes.
  const jwk = ed ? { kty, crv, x } : { kty, crv, x, y };
  const header = { typ: 'dpop+jwt', alg: ed ? 'EdDSA' : 'ES256', jwk };
  const claims = { htm: method, htu: path, iat: Math.floor(serverNow() / 1000), jti: crypto.randomUUID() };
  const signed = `${b64json(header)}.${b64json(claims)}`;
  // Both signatures are 64 bytes in WebCrypto's form (ECDSA's r || s), the JWS form as it is.
  const algorithm = ed ? { name: 'Ed25519' } : { name: 'ECDSA', hash: 'SHA-256' };
  const sig = await crypto.subtle.sign(algorithm, pair.privateKey, text.encode(signed));
  return `${signed}.${b64url(sig)}`;
}

/** The `dpop` option of a write to `path`: a fresh proof for every attempt. */
export function proving(method, path) {
  return () => proof(method, path);
}
