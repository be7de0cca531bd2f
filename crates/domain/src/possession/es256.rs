//! ES256 verification with precomputed multiples: the check `x(u1·G + u2·Q) = r` of
//! ECDSA, done with tables instead of two full scalar multiplications.
//!
//! An ECDSA verification is two scalar multiplications, and RustCrypto's `p256` does
//! each in constant time, 4 bits at a time, with 252 doublings (the whole check measured
//! about 400 µs here). A verification handles public values only (the key, the
//! signature, the message), so it may take variable time, and it may use tables:
//!
//! - `u1·G`: one static table of `v·256^i·G` (i < 32, 0 < v < 256; about 780 KB, built
//!   once per process): 32 additions, no doubling;
//! - `u2·Q`: per key, the multiples `v·2^(64j)·Q` (j < 4, 0 < v < 16; 60 points, about
//!   5.8 KB), so the 256-bit scalar is four 64-bit ones sharing 60 doublings, 4 bits at a
//!   time: at most 64 additions. Built once per key and kept in the node's `KeyCache`.
//!
//! The group law is `p256`'s (complete formulas); only the order of the additions is
//! ours. Cases check it against `p256`'s own verification, valid and forged.

use std::sync::LazyLock;

use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::group::Group as _;
use p256::elliptic_curve::ops::{Invert as _, Reduce};
use p256::elliptic_curve::point::AffineCoordinates as _;
use p256::{FieldBytes, ProjectivePoint, Scalar, U256};
use sha2::{Digest, Sha256};

/// `v·256^i·G` at `i·255 + v - 1`.
static BASE: LazyLock<Vec<ProjectivePoint>> = LazyLock::new(|| {
    let mut base = ProjectivePoint::GENERATOR;
    let mut table = Vec::with_capacity(32 * 255);
    for _ in 0..32 {
        table.extend(multiples::<255>(base));
        base = (0..8).fold(base, |p, _| p.double());
    }
    table
});

/// `1·p ..= N·p`. Projective: `p256` has no batch inversion for its field, and one
/// inversion per point would cost more than the additions it saves.
fn multiples<const N: usize>(p: ProjectivePoint) -> [ProjectivePoint; N] {
    let mut acc = ProjectivePoint::IDENTITY;
    std::array::from_fn(|_| {
        acc += p;
        acc
    })
}

/// A P-256 public key with its multiples: what the cache keeps of an ES256 key.
pub(super) struct Es256Key {
    /// `v·2^(64j)·Q` at `[j][v - 1]`.
    table: [[ProjectivePoint; 15]; 4],
}

impl Es256Key {
    pub(super) fn new(key: &VerifyingKey) -> Es256Key {
        let mut q = ProjectivePoint::from(*key.as_affine());
        let table = std::array::from_fn(|_| {
            let run = multiples::<15>(q);
            q = (0..64).fold(q, |p, _| p.double());
            run
        });
        Es256Key { table }
    }

    /// Whether `sig` is this key's ES256 signature of `msg` (SHA-256, as RFC 7518 says).
    pub(super) fn verify(&self, msg: &[u8], sig: &Signature) -> bool {
        let digest = Sha256::digest(msg);
        let z = <Scalar as Reduce<U256>>::reduce_bytes(FieldBytes::from_slice(&digest));
        let (r, s) = sig.split_scalars();
        let s: Scalar = *s;
        let Some(s_inv) = Option::<Scalar>::from(s.invert_vartime()) else {
            return false;
        };
        let (u1, u2) = (z * s_inv, *r * s_inv);
        let point = self.lincomb(&u1, &u2);
        if bool::from(point.is_identity()) {
            return false;
        }
        let x = point.to_affine().x();
        <Scalar as Reduce<U256>>::reduce_bytes(&x) == *r
    }

    /// `u1·G + u2·Q`.
    fn lincomb(&self, u1: &Scalar, u2: &Scalar) -> ProjectivePoint {
        let u2 = u2.to_bytes(); // big-endian
        let nibble = |bit: usize| (u2[31 - bit / 8] >> (bit % 8)) & 0xf;
        let mut acc = ProjectivePoint::IDENTITY;
        for w in (0..16).rev() {
            if w != 15 {
                acc = acc.double().double().double().double();
            }
            for j in 0..4 {
                let v = nibble(64 * j + 4 * w) as usize;
                if v != 0 {
                    acc += &self.table[j][v - 1];
                }
            }
        }
        let base = &*BASE;
        for (i, &b) in u1.to_bytes().iter().rev().enumerate() {
            if b != 0 {
                acc += &base[i * 255 + b as usize - 1];
            }
        }
        acc
    }
}
