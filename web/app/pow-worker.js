// Solves the waiting room's proof of work off the page's thread: finds a nonce such
// that sha256(challenge + ":" + nonce) starts with `difficulty` zero bits. SHA-256 is
// written out here because the browser's own (crypto.subtle) is asynchronous and far
// slower per call; the challenge's full 64-byte blocks are hashed once, so each try
// hashes only the tail. Posts {tried} now and then, and {nonce, tried} when done.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const W = new Int32Array(64);

function compress(H, bytes, off) {
  for (let i = 0; i < 16; i++) {
    const j = off + 4 * i;
    W[i] = (bytes[j] << 24) | (bytes[j + 1] << 16) | (bytes[j + 2] << 8) | bytes[j + 3];
  }
  for (let i = 16; i < 64; i++) {
    const x = W[i - 15];
    const y = W[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
  }
  let [a, b, c, d, e, f, g, h] = H;
  for (let i = 0; i < 64; i++) {
    const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
    const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] = (H[0] + a) | 0;
  H[1] = (H[1] + b) | 0;
  H[2] = (H[2] + c) | 0;
  H[3] = (H[3] + d) | 0;
  H[4] = (H[4] + e) | 0;
  H[5] = (H[5] + f) | 0;
  H[6] = (H[6] + g) | 0;
  H[7] = (H[7] + h) | 0;
}

/** A hasher of `prefix + suffix` that has already consumed the prefix's full blocks. */
export function prefixed(prefix) {
  const bytes = new TextEncoder().encode(prefix);
  const full = bytes.length - (bytes.length % 64);
  const mid = Int32Array.from(IV);
  for (let off = 0; off < full; off += 64) compress(mid, bytes, off);
  const tail = bytes.subarray(full);
  const buf = new Uint8Array(192);
  const H = new Int32Array(8);
  const total = bytes.length;
  /** The first 32 bits of sha256(prefix + suffix); suffix is ASCII. */
  return function first32(suffix) {
    buf.fill(0);
    buf.set(tail);
    let n = tail.length;
    for (let i = 0; i < suffix.length; i++) buf[n++] = suffix.charCodeAt(i);
    buf[n++] = 0x80;
    const blocks = n + 8 <= 64 ? 1 : n + 8 <= 128 ? 2 : 3;
    const bits = (total + suffix.length) * 8;
    const end = blocks * 64;
    buf[end - 4] = (bits >>> 24) & 0xff;
    buf[end - 3] = (bits >>> 16) & 0xff;
    buf[end - 2] = (bits >>> 8) & 0xff;
    buf[end - 1] = bits & 0xff;
    buf[end - 5] = Math.floor(bits / 2 ** 32) & 0xff;
    H.set(mid);
    for (let b = 0; b < blocks; b++) compress(H, buf, b * 64);
    return H[0] >>> 0;
  };
}

/** The first nonce (counting up from 0) whose hash has `difficulty` leading zero bits. */
export function solve(challenge, difficulty, onProgress = () => {}) {
  const first32 = prefixed(`${challenge}:`);
  const shift = 32 - Math.min(difficulty, 32);
  for (let n = 0; ; n++) {
    const v = first32(String(n));
    if (difficulty === 0 || (shift === 0 ? v === 0 : v >>> shift === 0)) return { nonce: String(n), tried: n + 1 };
    if (n % 16384 === 16383) onProgress(n + 1);
  }
}

if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) {
  self.onmessage = (e) => {
    const { challenge, difficulty } = e.data;
    const found = solve(challenge, difficulty, (tried) => self.postMessage({ tried }));
    self.postMessage(found);
  };
}
