//! The outbox as the relay sees it (the `Outbox` port): sinks, the deliveries each still
//! has to receive, their claims, and the order history the outbox is written from
//! (migrations/sqlite/0006_order_events_out.sql writes both by trigger). Claims are
//! writer jobs, so on one SQLite file they never race.

use boxoffice_domain::{EventId, Millis, OrderId, OrderState};
use boxoffice_engine::ports::{
    ClaimDeliveries, DeadLetter, Delivery, Failure, HistoryLine, NATS_SINK, OutboxEvent, Sink,
    SinkKind, StoreError,
};
use rusqlite::{Connection, Row, params};

use crate::conn::{corrupt, db};
use crate::writer::Step;

pub(crate) fn history(conn: &Connection, order: OrderId) -> Result<Vec<HistoryLine>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT event, from_state, to_state, at FROM order_events WHERE order_id = ?1 ORDER BY id",
        )
        .map_err(db)?;
    let rows = stmt
        .query_map([order.to_string()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .map_err(db)?;
    let mut lines = Vec::new();
    for (i, row) in rows.enumerate() {
        let (event, from, to, at) = row.map_err(db)?;
        let state = |s: &str| OrderState::parse(s).ok_or_else(|| corrupt("order state", s));
        lines.push(HistoryLine {
            sequence: u32::try_from(i + 1).unwrap_or(u32::MAX),
            event,
            from_state: from.as_deref().map(state).transpose()?,
            to_state: state(&to)?,
            at: Millis(at),
        });
    }
    Ok(lines)
}

/// Writer job.
pub(crate) fn add_sink(conn: &Connection, sink: &Sink) -> Result<Step<()>, StoreError> {
    let (kind, url, secret) = match &sink.kind {
        SinkKind::Webhook { url, secret } => ("webhook", url.as_str(), secret.as_str()),
        SinkKind::Nats => ("nats", "", ""),
    };
    conn.prepare_cached(
        "INSERT INTO outbox_sinks (id, kind, url, secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (id) DO NOTHING",
    )
    .and_then(|mut s| s.execute(params![sink.id, kind, url, secret, sink.created_at.0]))
    .map_err(db)?;
    Ok(Step::Keep(()))
}

pub(crate) fn sinks(conn: &Connection) -> Result<Vec<Sink>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, kind, url, secret, created_at FROM outbox_sinks ORDER BY created_at, id",
        )
        .map_err(db)?;
    let rows = stmt
        .query_map([], |r| {
            let kind: String = r.get(1)?;
            let kind = if kind == "nats" {
                SinkKind::Nats
            } else {
                SinkKind::Webhook {
                    url: r.get(2)?,
                    secret: r.get(3)?,
                }
            };
            Ok(Sink {
                id: r.get(0)?,
                kind,
                created_at: Millis(r.get(4)?),
            })
        })
        .map_err(db)?;
    rows.collect::<Result<_, _>>().map_err(db)
}

/// Writer job: the deliveries go first (the foreign key).
pub(crate) fn remove_sink(conn: &Connection, id: &str) -> Result<Step<bool>, StoreError> {
    conn.prepare_cached("DELETE FROM outbox_deliveries WHERE sink = ?1")
        .and_then(|mut s| s.execute([id]))
        .map_err(db)?;
    let gone = conn
        .prepare_cached("DELETE FROM outbox_sinks WHERE id = ?1")
        .and_then(|mut s| s.execute([id]))
        .map_err(db)?;
    Ok(Step::Keep(gone == 1))
}

const EVENT_COLUMNS: &str =
    "o.id, o.order_id, o.sale_event_id, o.seq, o.kind, o.payload, o.created_at";

/// An outbox row as stored, before its order id is parsed.
struct RawEvent {
    row: i64,
    order: String,
    sale_event: i64,
    sequence: u32,
    kind: String,
    payload: String,
    created_at: i64,
}

fn event(r: &Row<'_>, at: usize) -> rusqlite::Result<RawEvent> {
    Ok(RawEvent {
        row: r.get(at)?,
        order: r.get(at + 1)?,
        sale_event: r.get(at + 2)?,
        sequence: r.get(at + 3)?,
        kind: r.get(at + 4)?,
        payload: r.get(at + 5)?,
        created_at: r.get(at + 6)?,
    })
}

fn with_order(e: RawEvent) -> Result<OutboxEvent, StoreError> {
    Ok(OutboxEvent {
        row: e.row,
        order: e
            .order
            .parse()
            .map_err(|_| corrupt("outbox order id", &e.order))?,
        sale_event: EventId(e.sale_event),
        sequence: e.sequence,
        kind: e.kind,
        payload: e.payload,
        created_at: Millis(e.created_at),
    })
}

/// Writer job: the oldest due deliveries whose order has nothing earlier waiting for
/// the same sink, each leased to the claimant.
/// The due deliveries that are the first undelivered event of their order for their
/// sink. The earlier-event check names its index: without table statistics the planner
/// took the primary key (every earlier delivery of the sink) for it, which made a claim
/// cost the whole backlog and draining a backlog quadratic (measured: 2,000 orders'
/// events relayed at 54 a second).
fn claim_sql() -> String {
    format!(
        "SELECT d.sink, d.attempts, {EVENT_COLUMNS} FROM outbox_deliveries d
         JOIN outbox o ON o.id = d.outbox_id
         WHERE d.dead_at IS NULL AND d.next_attempt_at <= ?1 AND d.lease_until <= ?1
           AND (?3 OR d.sink <> ?4)
           AND NOT EXISTS (SELECT 1 FROM outbox_deliveries e
                           INDEXED BY outbox_deliveries_by_order
                           WHERE e.sink = d.sink AND e.order_id = d.order_id
                             AND e.outbox_id < d.outbox_id AND e.dead_at IS NULL)
         ORDER BY d.outbox_id LIMIT ?2"
    )
}

pub(crate) fn claim(
    conn: &Connection,
    q: &ClaimDeliveries<'_>,
) -> Result<Step<Vec<Delivery>>, StoreError> {
    let sql = claim_sql();
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
    let found = {
        let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
        let rows = stmt
            .query_map(params![q.now.0, limit, q.nats, NATS_SINK], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?, event(r, 2)?))
            })
            .map_err(db)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db)?
    };
    let mut lease = conn
        .prepare_cached(
            "UPDATE outbox_deliveries SET lease_owner = ?3, lease_until = ?4, attempts = attempts + 1
             WHERE sink = ?1 AND outbox_id = ?2",
        )
        .map_err(db)?;
    let mut claimed = Vec::with_capacity(found.len());
    for (sink, attempts, raw) in found {
        let event = with_order(raw)?;
        lease
            .execute(params![sink, event.row, q.owner, q.lease_until.0])
            .map_err(db)?;
        claimed.push(Delivery {
            sink,
            event,
            attempts: attempts + 1,
        });
    }
    Ok(Step::Keep(claimed))
}

/// Writer job.
pub(crate) fn delivered(conn: &Connection, sink: &str, row: i64) -> Result<Step<()>, StoreError> {
    conn.prepare_cached("DELETE FROM outbox_deliveries WHERE sink = ?1 AND outbox_id = ?2")
        .and_then(|mut s| s.execute(params![sink, row]))
        .map_err(db)?;
    Ok(Step::Keep(()))
}

/// Writer job: a failed attempt, and (unless it died) the later deliveries of its order
/// to the same sink moved to its retry: they wait for it anyway (the claim's
/// earlier-event check), and left due they were read by every claim, so a claim cost
/// the whole backlog of a failing sink.
pub(crate) fn failed(
    conn: &Connection,
    sink: &str,
    row: i64,
    f: &Failure<'_>,
) -> Result<Step<()>, StoreError> {
    let failed = conn
        .prepare_cached(
            "UPDATE outbox_deliveries SET lease_owner = NULL, lease_until = 0, next_attempt_at = ?4,
                last_error = ?5, dead_at = CASE WHEN ?6 THEN ?7 END
             WHERE sink = ?1 AND outbox_id = ?2 AND lease_owner = ?3",
        )
        .and_then(|mut s| {
            s.execute(params![
                sink,
                row,
                f.owner,
                f.retry_at.0,
                f.error,
                f.dead,
                f.now.0
            ])
        })
        .map_err(db)?;
    if failed == 1 && !f.dead {
        conn.prepare_cached(
            "UPDATE outbox_deliveries INDEXED BY outbox_deliveries_by_order
             SET next_attempt_at = ?3
             WHERE sink = ?1 AND outbox_id > ?2 AND dead_at IS NULL AND next_attempt_at < ?3
               AND order_id = (SELECT order_id FROM outbox_deliveries
                               WHERE sink = ?1 AND outbox_id = ?2)",
        )
        .and_then(|mut s| s.execute(params![sink, row, f.retry_at.0]))
        .map_err(db)?;
    }
    Ok(Step::Keep(()))
}

pub(crate) fn dead_letters(
    conn: &Connection,
    sink: &str,
    limit: usize,
) -> Result<Vec<DeadLetter>, StoreError> {
    let sql = format!(
        "SELECT d.attempts, d.last_error, d.dead_at, {EVENT_COLUMNS} FROM outbox_deliveries d
         JOIN outbox o ON o.id = d.outbox_id
         WHERE d.sink = ?1 AND d.dead_at IS NOT NULL ORDER BY d.outbox_id LIMIT ?2"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(db)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![sink, limit], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
                event(r, 3)?,
            ))
        })
        .map_err(db)?;
    let mut letters = Vec::new();
    for row in rows {
        let (attempts, error, dead_at, raw) = row.map_err(db)?;
        letters.push(DeadLetter {
            event: with_order(raw)?,
            attempts,
            last_error: error.unwrap_or_default(),
            dead_at: Millis(dead_at),
        });
    }
    Ok(letters)
}

/// Writer job.
pub(crate) fn release_claims(conn: &Connection, owner: &str) -> Result<Step<u64>, StoreError> {
    let n = conn
        .prepare_cached(
            "UPDATE outbox_deliveries SET lease_owner = NULL, lease_until = 0
             WHERE lease_owner IS NOT NULL AND lease_owner <> ?1",
        )
        .and_then(|mut s| s.execute(params![owner]))
        .map_err(db)?;
    Ok(Step::Keep(n as u64))
}

/// Writer job.
pub(crate) fn replay_dead(
    conn: &Connection,
    sink: &str,
    now: Millis,
) -> Result<Step<u64>, StoreError> {
    let n = conn
        .prepare_cached(
            "UPDATE outbox_deliveries SET dead_at = NULL, attempts = 0, next_attempt_at = ?2,
                lease_owner = NULL, lease_until = 0
             WHERE sink = ?1 AND dead_at IS NOT NULL",
        )
        .and_then(|mut s| s.execute(params![sink, now.0]))
        .map_err(db)?;
    Ok(Step::Keep(n as u64))
}

mod port {
    use async_trait::async_trait;
    use boxoffice_domain::{Millis, OrderId};
    use boxoffice_engine::ports::{
        ClaimDeliveries, DeadLetter, Delivery, Failure, HistoryLine, Outbox, Sink, StoreError,
    };

    use crate::SqliteLedger;

    #[async_trait]
    impl Outbox for SqliteLedger {
        #[tracing::instrument(level = "debug", skip_all, fields(order = %order))]
        async fn history(&self, order: OrderId) -> Result<Vec<HistoryLine>, StoreError> {
            self.readers.read(move |c| super::history(c, order)).await
        }

        async fn add_sink(&self, sink: &Sink) -> Result<(), StoreError> {
            let sink = sink.clone();
            self.writer.submit(move |c| super::add_sink(c, &sink)).await
        }

        async fn sinks(&self) -> Result<Vec<Sink>, StoreError> {
            self.readers.read(super::sinks).await
        }

        async fn remove_sink(&self, id: &str) -> Result<bool, StoreError> {
            let id = id.to_owned();
            self.writer
                .submit(move |c| super::remove_sink(c, &id))
                .await
        }

        #[tracing::instrument(level = "debug", skip_all)]
        async fn claim(&self, q: &ClaimDeliveries<'_>) -> Result<Vec<Delivery>, StoreError> {
            let owner = q.owner.to_owned();
            let (now, lease_until, limit, nats) = (q.now, q.lease_until, q.limit, q.nats);
            self.writer
                .submit(move |c| {
                    let q = ClaimDeliveries {
                        owner: &owner,
                        now,
                        lease_until,
                        limit,
                        nats,
                    };
                    super::claim(c, &q)
                })
                .await
        }

        async fn delivered(&self, sink: &str, row: i64) -> Result<(), StoreError> {
            let sink = sink.to_owned();
            self.writer
                .submit(move |c| super::delivered(c, &sink, row))
                .await
        }

        async fn failed(&self, sink: &str, row: i64, f: &Failure<'_>) -> Result<(), StoreError> {
            let (sink, owner, error) = (sink.to_owned(), f.owner.to_owned(), f.error.to_owned());
            let (retry_at, dead, now) = (f.retry_at, f.dead, f.now);
            self.writer
                .submit(move |c| {
                    let f = Failure {
                        owner: &owner,
                        retry_at,
                        dead,
                        error: &error,
                        now,
                    };
                    super::failed(c, &sink, row, &f)
                })
                .await
        }

        async fn dead_letters(
            &self,
            sink: &str,
            limit: usize,
        ) -> Result<Vec<DeadLetter>, StoreError> {
            let sink = sink.to_owned();
            self.readers
                .read(move |c| super::dead_letters(c, &sink, limit))
                .await
        }

        async fn release_claims(&self, owner: &str) -> Result<u64, StoreError> {
            let owner = owner.to_owned();
            self.writer
                .submit(move |c| super::release_claims(c, &owner))
                .await
        }

        async fn replay_dead(&self, sink: &str, now: Millis) -> Result<u64, StoreError> {
            let sink = sink.to_owned();
            self.writer
                .submit(move |c| super::replay_dead(c, &sink, now))
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use boxoffice_domain::{Millis, OrderId};
    use boxoffice_engine::ports::{ClaimDeliveries, Failure};
    use rusqlite::StatementStatus;

    use crate::writer::Step;

    /// A sink that fails holds back every later event of each order it failed on, and
    /// those deliveries stayed due: every claim (one a relay interval) read them all and
    /// found each waiting for its order's first, so a claim cost the failing sink's
    /// whole backlog. They now wait with the failed one (`failed`), and a claim reads
    /// only what may go.
    #[test]
    fn a_claim_does_not_read_the_backlog_a_failing_sink_holds_back() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::migrate::run(&conn).unwrap();
        conn.pragma_update(None, "foreign_keys", false).unwrap();
        conn.execute(
            "INSERT INTO outbox_sinks (id, kind, url, secret, created_at)
             VALUES ('we_a', 'webhook', '', '', 0)",
            [],
        )
        .unwrap();
        // 50 orders of 20 events: 1,000 deliveries, due at once.
        for _ in 0..50 {
            let order = OrderId::random().to_string();
            for seq in 1..=20 {
                conn.execute(
                    "INSERT INTO outbox (order_id, kind, payload, created_at, seq, sale_event_id)
                     VALUES (?1, 'order.moved', '{}', 0, ?2, 1)",
                    rusqlite::params![order, seq],
                )
                .unwrap();
            }
        }
        let claim = |now: i64| ClaimDeliveries {
            owner: "r1",
            now: Millis(now),
            lease_until: Millis(now + 1_000),
            limit: 100,
            nats: true,
        };
        let Step::Keep(heads) = super::claim(&conn, &claim(1)).unwrap() else {
            panic!("a claim keeps its answer")
        };
        assert_eq!(heads.len(), 50, "each order's first event");
        let retry_at = Millis(10_000);
        for head in &heads {
            let f = Failure {
                owner: "r1",
                retry_at,
                dead: false,
                error: "503 from the endpoint",
                now: Millis(1),
            };
            super::failed(&conn, "we_a", head.event.row, &f).unwrap();
        }
        // Nothing may go now, and finding that out reads next to nothing.
        let mut stmt = conn.prepare(&super::claim_sql()).unwrap();
        let found = stmt
            .query_map(rusqlite::params![2, 100, true, "nats"], |_| Ok(()))
            .unwrap()
            .count();
        assert_eq!(found, 0);
        let steps = stmt.get_status(StatementStatus::VmStep);
        assert!(steps < 200, "{steps} steps of the claim for 950 held back");
        // The held-back events go with their order's first, once it went.
        let Step::Keep(again) = super::claim(&conn, &claim(retry_at.0)).unwrap() else {
            panic!("a claim keeps its answer")
        };
        assert_eq!(again.len(), 50);
        for head in &again {
            super::delivered(&conn, "we_a", head.event.row).unwrap();
        }
        let Step::Keep(next) = super::claim(&conn, &claim(retry_at.0)).unwrap() else {
            panic!("a claim keeps its answer")
        };
        assert_eq!(next.len(), 50, "each order's second event");
        assert!(next.iter().all(|d| d.event.sequence == 2));
    }

    /// The claim's check for an earlier undelivered event of the same order looks up
    /// that order's deliveries, not every earlier delivery of the sink.
    #[test]
    fn a_claim_looks_up_earlier_events_by_order() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::migrate::run(&conn).unwrap();
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::claim_sql()))
            .unwrap();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params![0, 100, true, "nats"], |r| {
                r.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains(
                "SEARCH e USING INDEX outbox_deliveries_by_order (sink=? AND order_id=?"
            )),
            "{plan:#?}"
        );
    }
}
