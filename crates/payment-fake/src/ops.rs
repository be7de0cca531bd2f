//! The provider's operations on its book, each one SQLite transaction so that a
//! decision and the write it leads to cannot be split by a concurrent call or a crash.
//! Synchronous: the gateway runs these on the blocking pool.

use boxoffice_domain::OrderId;
use boxoffice_engine::ports::{AuthorizeOutcome, AuthorizeRequest, PaymentError, ProviderState};
use rusqlite::{Connection, Transaction, TransactionBehavior};
use uuid::Uuid;

use crate::records::{self, Record};
use crate::script::{CARD_DECLINED, Script};
use crate::transitions::{self, Move, Step};

/// Authorizes an order at most once. A repeat of a known order answers what the first
/// call decided, whatever the script says now, as a provider replays a stored response
/// for a reused idempotency key.
pub fn authorize(
    conn: &mut Connection,
    req: &AuthorizeRequest,
    script: Script,
) -> Result<AuthorizeOutcome, PaymentError> {
    let tx = begin(conn)?;
    if let Some(first) = records::get(&tx, req.order).map_err(storage)? {
        return replay(&first, req);
    }
    let (state, decline_reason) = match script {
        Script::TimeoutBeforeCharge => return Err(PaymentError::Timeout),
        Script::Approve | Script::TimeoutAfterCharge => (ProviderState::Authorized, None),
        Script::Decline(reason) => (ProviderState::Declined, Some(reason.to_owned())),
    };
    let now = records::now_ms();
    let record = Record {
        order: req.order,
        reference: format!("fake_pi_{}", Uuid::new_v4().simple()),
        amount: req.amount,
        currency: req.currency.clone(),
        payment_method: req.payment_method.clone(),
        state,
        decline_reason,
        created_at_ms: now,
        updated_at_ms: now,
    };
    records::insert(&tx, &record).map_err(storage)?;
    tx.commit().map_err(storage)?;
    if script == Script::TimeoutAfterCharge {
        // The charge is on the provider's book; only the answer is lost.
        return Err(PaymentError::Timeout);
    }
    Ok(outcome_of(&record))
}

/// Captures, voids or refunds a known payment, idempotently.
pub fn apply(
    conn: &mut Connection,
    order: OrderId,
    reference: &str,
    mv: Move,
) -> Result<(), PaymentError> {
    let tx = begin(conn)?;
    let Some(record) = records::get(&tx, order).map_err(storage)? else {
        return Err(PaymentError::Rejected(format!(
            "no payment on record for order {order}"
        )));
    };
    if record.reference != reference {
        return Err(PaymentError::Rejected(format!(
            "reference {reference} does not belong to order {order} (its payment is {})",
            record.reference
        )));
    }
    let step = transitions::decide(mv, record.state)
        .map_err(|why| PaymentError::Rejected(format!("order {order}: {why}")))?;
    if let Step::Go(to) = step {
        records::set_state(&tx, order, to).map_err(storage)?;
        tx.commit().map_err(storage)?;
    }
    Ok(())
}

/// A storage failure looks to the engine like a provider outage: the call may be
/// retried, and nothing was acknowledged.
pub fn storage(e: rusqlite::Error) -> PaymentError {
    PaymentError::Unavailable(format!("fake provider storage failed: {e}"))
}

/// IMMEDIATE takes the write lock up front, so two processes sharing the file cannot
/// both read "no row" and then both insert.
fn begin(conn: &mut Connection) -> Result<Transaction<'_>, PaymentError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(storage)
}

/// A reused idempotency key with different money is a caller bug; a real provider
/// refuses it rather than silently answering for the first amount.
fn replay(first: &Record, req: &AuthorizeRequest) -> Result<AuthorizeOutcome, PaymentError> {
    if first.amount != req.amount || first.currency != req.currency {
        return Err(PaymentError::Rejected(format!(
            "order {} was first authorized for {} {}, not {} {}",
            first.order, first.amount.0, first.currency, req.amount.0, req.currency
        )));
    }
    Ok(outcome_of(first))
}

fn outcome_of(r: &Record) -> AuthorizeOutcome {
    match r.state {
        ProviderState::Declined => AuthorizeOutcome::Declined {
            reason: r
                .decline_reason
                .clone()
                .unwrap_or_else(|| CARD_DECLINED.to_owned()),
        },
        _ => AuthorizeOutcome::Approved {
            reference: r.reference.clone(),
        },
    }
}
