//! The provider's operations on its book, each one SQLite transaction so that a
//! decision and the write it leads to cannot be split by a concurrent call or a crash.
//! Synchronous: the gateway runs these on the blocking pool.

use boxoffice_domain::{Money, OrderId};
use boxoffice_engine::ports::{AuthorizeOutcome, AuthorizeRequest, PaymentError, ProviderState};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};
use uuid::Uuid;

use crate::records::{self, Record};
use crate::script::{CARD_DECLINED, Script};
use crate::transitions::{self, Move, Step};
use crate::webhooks;

/// Webhook types of a first authorization, by the state it left.
fn authorize_kind(state: ProviderState) -> &'static str {
    match state {
        ProviderState::Declined => "payment_intent.payment_failed",
        ProviderState::RequiresAction => "payment_intent.requires_action",
        ProviderState::Captured => "payment_intent.succeeded",
        _ => "payment_intent.amount_capturable_updated",
    }
}

/// Authorizes an order at most once. A repeat of a known order answers what the first
/// call decided, whatever the script says now, as a provider replays a stored response
/// for a reused idempotency key.
pub fn authorize(
    conn: &mut Connection,
    req: &AuthorizeRequest,
    script: Script,
    copies: u32,
) -> Result<AuthorizeOutcome, PaymentError> {
    let tx = begin(conn)?;
    if let Some(first) = records::get(&tx, req.order).map_err(storage)? {
        return replay(&first, req);
    }
    let (state, decline_reason) = match script {
        Script::TimeoutBeforeCharge => return Err(PaymentError::Timeout),
        Script::Refuse => {
            return Err(PaymentError::Rejected(format!(
                "payment method {} refused",
                req.payment_method
            )));
        }
        Script::Approve | Script::TimeoutAfterCharge => (ProviderState::Authorized, None),
        Script::Decline(reason) => (ProviderState::Declined, Some(reason.to_owned())),
        Script::RequiresAction { .. } => (ProviderState::RequiresAction, None),
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
    webhooks::enqueue(&tx, &record, authorize_kind(state), copies).map_err(storage)?;
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
    copies: u32,
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
        let after = Record {
            state: to,
            ..record
        };
        webhooks::enqueue(&tx, &after, mv.webhook_kind(), copies).map_err(storage)?;
        tx.commit().map_err(storage)?;
    }
    Ok(())
}

/// Refunds part of a captured payment once per key: a repeated key answers as the
/// first call did without refunding again; never more than the payment in total. The
/// part that brings the refunds to the whole amount leaves the payment refunded.
pub fn refund_part(
    conn: &mut Connection,
    order: OrderId,
    reference: &str,
    amount: Money,
    key: &str,
) -> Result<(), PaymentError> {
    let tx = begin(conn)?;
    let Some(record) = records::get(&tx, order).map_err(storage)? else {
        return Err(PaymentError::Rejected(format!(
            "no payment on record for order {order}"
        )));
    };
    if record.reference != reference {
        return Err(PaymentError::Rejected(format!(
            "reference {reference} does not belong to order {order}"
        )));
    }
    let known: Option<(String, i64)> = tx
        .query_row(
            "SELECT order_id, amount FROM partial_refunds WHERE key = ?1",
            rusqlite::params![key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(storage)?;
    if let Some((first_order, first_amount)) = known {
        return if first_order == order.to_string() && first_amount == amount.0 {
            Ok(())
        } else {
            Err(PaymentError::Rejected(format!(
                "refund key {key} was used for another refund"
            )))
        };
    }
    if record.state != ProviderState::Captured {
        return Err(PaymentError::Rejected(format!(
            "order {order}: the payment is {}, not captured",
            transitions::state_name(record.state)
        )));
    }
    let before = records::refunded_in_parts(&tx, order).map_err(storage)?;
    if amount.0 <= 0 || before.0 + amount.0 > record.amount.0 {
        return Err(PaymentError::Rejected(format!(
            "order {order}: cannot refund {} of {} ({} refunded before)",
            amount.0, record.amount.0, before.0
        )));
    }
    records::insert_partial_refund(&tx, key, order, amount).map_err(storage)?;
    if before.0 + amount.0 == record.amount.0 {
        // Refunded in full, part by part: nothing is captured any more, as a provider
        // marks a charge whose refunds reach its amount.
        records::set_state(&tx, order, ProviderState::Refunded).map_err(storage)?;
    }
    tx.commit().map_err(storage)
}

/// The buyer finished (or abandoned) the bank's step of a payment waiting for them:
/// it becomes authorized (captured, for a bank redirect) or declined, with its webhook.
pub fn complete_action(
    conn: &mut Connection,
    order: OrderId,
    approve: bool,
    copies: u32,
) -> Result<ProviderState, PaymentError> {
    let tx = begin(conn)?;
    let Some(record) = records::get(&tx, order).map_err(storage)? else {
        return Err(PaymentError::Rejected(format!(
            "no payment for order {order}"
        )));
    };
    if record.state != ProviderState::RequiresAction {
        return Err(PaymentError::Rejected(format!(
            "order {order}: the payment is {}, not waiting for the buyer",
            transitions::state_name(record.state)
        )));
    }
    // Which kind of wait this is was decided by the method at authorization.
    let captures =
        Script::for_method(&record.payment_method) == (Script::RequiresAction { captures: true });
    let (to, reason) = match (approve, captures) {
        (false, _) => (ProviderState::Declined, Some(CARD_DECLINED.to_owned())),
        (true, true) => (ProviderState::Captured, None),
        (true, false) => (ProviderState::Authorized, None),
    };
    records::set_state(&tx, order, to).map_err(storage)?;
    tx.execute(
        "UPDATE payments SET decline_reason = ?2 WHERE order_id = ?1",
        rusqlite::params![order.to_string(), reason],
    )
    .map_err(storage)?;
    let after = Record {
        state: to,
        ..record
    };
    webhooks::enqueue(&tx, &after, authorize_kind(to), copies).map_err(storage)?;
    tx.commit().map_err(storage)?;
    Ok(to)
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
        ProviderState::RequiresAction => AuthorizeOutcome::ActionRequired {
            reference: r.reference.clone(),
            next_action: boxoffice_engine::ports::NextAction {
                kind: "redirect_to_url".into(),
                // The stand-in's own confirmation page, served by the node that runs it.
                url: Some(format!("{}{}", crate::CONFIRM_PATH, r.reference)),
            },
        },
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
