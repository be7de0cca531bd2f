//! `load`: rebuilds an event from its layout and the ledger's sold seats, in chunks.
//!
//! One script per chunk keeps Redis responsive for the other events while a
//! 50,000-seat event loads (a single script would block it for the whole load), and
//! the chunks are sent concurrently so they pipeline over the one connection. The
//! first step forgets the event and records a token; every chunk checks it, and the
//! last step writes the "loaded" marker, so a half-loaded event is never treated as
//! loaded and two concurrent loads cannot mix their halves.

use std::collections::HashMap;

use boxoffice_domain::BuyerId;
use boxoffice_engine::ports::{ArbiterLayout, SoldSeat, StoreError};
use futures::future::try_join_all;

use super::RedisArbiter;
use crate::scripts::{LOAD_BEGIN, LOAD_BUYERS, LOAD_DONE, LOAD_SEATS};

/// Bytes per seat in the layout string (see `lua/common.lua`).
const REC: usize = 20;
/// Free-seat scores are `section * SLOT + place`, exact in a double up to 2^20 seats.
const SLOT: u64 = 1 << 20;

/// Everything a load writes, computed before Redis is touched.
struct Plan {
    records: Vec<u8>,
    /// Per seat: its score in the free set, or None when sold.
    scores: Vec<Option<u64>>,
    free_bits: Vec<u8>,
    sold_bits: Vec<u8>,
    sold: u32,
    taken: Vec<(BuyerId, u32)>,
    seated: String,
}

impl Plan {
    fn new(layout: &ArbiterLayout, sold: &[SoldSeat]) -> Result<Plan, StoreError> {
        let n = layout.seats.len();
        let event = layout.event;
        if n as u64 >= SLOT || layout.sections.len() > usize::from(u16::MAX) {
            return Err(StoreError(format!("event {event} is too large for Redis")));
        }
        let mut by_section: Vec<Vec<usize>> = vec![Vec::new(); layout.sections.len()];
        for (i, s) in layout.seats.iter().enumerate() {
            by_section
                .get_mut(usize::from(s.section))
                .ok_or_else(|| StoreError(format!("seat {i} names missing section {}", s.section)))?
                .push(i);
        }
        let mut place = vec![0u32; n];
        for order in &mut by_section {
            order.sort_unstable_by_key(|&s| (layout.seats[s].rank, s));
            for (p, &s) in order.iter().enumerate() {
                place[s] = p as u32;
            }
        }
        let mut plan = Plan {
            records: Vec::with_capacity(n * REC),
            scores: Vec::with_capacity(n),
            free_bits: vec![0; n.div_ceil(8)],
            sold_bits: vec![0; n.div_ceil(8)],
            sold: 0,
            taken: Vec::new(),
            seated: layout
                .sections
                .iter()
                .map(|s| if s.seated { '1' } else { '0' })
                .collect(),
        };
        for (i, s) in layout.seats.iter().enumerate() {
            plan.records.extend_from_slice(&s.section.to_be_bytes());
            plan.records.extend_from_slice(&s.row.to_be_bytes());
            plan.records.extend_from_slice(&s.rank.to_be_bytes());
            plan.records.extend_from_slice(&place[i].to_be_bytes());
            plan.records.extend_from_slice(&s.price.0.to_be_bytes());
            plan.scores
                .push(Some(u64::from(s.section) * SLOT + u64::from(place[i])));
            plan.free_bits[i / 8] |= 0x80 >> (i % 8);
        }
        plan.mark_sold(layout, sold)?;
        Ok(plan)
    }

    fn mark_sold(&mut self, layout: &ArbiterLayout, sold: &[SoldSeat]) -> Result<(), StoreError> {
        let mut taken: HashMap<BuyerId, u32> = HashMap::new();
        for s in sold {
            let i = s.seat as usize;
            let score = self.scores.get_mut(i).ok_or_else(|| {
                StoreError(format!(
                    "sold seat {} is not in event {}",
                    s.seat, layout.event
                ))
            })?;
            // A seat listed twice is still one ticket for its buyer.
            if score.take().is_some() {
                self.free_bits[i / 8] &= !(0x80 >> (i % 8));
                self.sold_bits[i / 8] |= 0x80 >> (i % 8);
                self.sold += 1;
                *taken.entry(s.buyer).or_default() += 1;
            }
        }
        self.taken = taken.into_iter().collect();
        Ok(())
    }
}

fn check(step: &str, reply: &str) -> Result<(), StoreError> {
    match reply {
        "ok" => Ok(()),
        _ => Err(StoreError(format!(
            "load {step}: another load of the same event took over"
        ))),
    }
}

/// Loads the event; with `if_lost`, only if it is not loaded when the load begins
/// (false then, and nothing written).
pub(super) async fn load(
    arb: &RedisArbiter,
    layout: &ArbiterLayout,
    sold: &[SoldSeat],
    if_lost: bool,
) -> Result<bool, StoreError> {
    let plan = Plan::new(layout, sold)?;
    let (event, token) = (layout.event, uuid::Uuid::new_v4().to_string());
    let ttl_ms = arb.config.load_ttl.as_millis() as u64;
    let begun: String = arb
        .eval(&LOAD_BEGIN, event, |inv| {
            inv.arg(&token)
                .arg(ttl_ms)
                .arg(if if_lost { "1" } else { "0" });
        })
        .await?;
    if begun == "loaded" {
        return Ok(false);
    }
    check("begin", &begun)?;
    let chunk = arb.config.load_chunk.max(1);
    let (token, plan) = (&token, &plan);
    let seats = (0..plan.scores.len()).step_by(chunk).map(|from| {
        let to = (from + chunk).min(plan.scores.len());
        arb.eval::<String>(&LOAD_SEATS, event, move |inv| {
            inv.arg(token)
                .arg(from * REC)
                .arg(&plan.records[from * REC..to * REC]);
            for (seat, score) in (from..to).zip(&plan.scores[from..to]) {
                if let Some(score) = score {
                    inv.arg(score).arg(seat);
                }
            }
        })
    });
    let buyers = plan.taken.chunks(chunk).map(|part| {
        arb.eval::<String>(&LOAD_BUYERS, event, move |inv| {
            inv.arg(token);
            for (buyer, n) in part {
                inv.arg(buyer.to_string()).arg(n);
            }
        })
    });
    for reply in try_join_all(seats).await? {
        check("seats", &reply)?;
    }
    for reply in try_join_all(buyers).await? {
        check("buyers", &reply)?;
    }
    let done: String = arb
        .eval(&LOAD_DONE, event, |inv| {
            inv.arg(token)
                .arg(&plan.free_bits)
                .arg(&plan.sold_bits)
                .arg(plan.scores.len())
                .arg(layout.max_per_buyer)
                .arg(&plan.seated)
                .arg(plan.sold);
        })
        .await?;
    check("done", &done).map(|()| true)
}
