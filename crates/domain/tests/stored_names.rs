//! The names the SQL ledgers store (sale statuses, order states, order events, outbox
//! kinds) are the domain's: the adapters bind `as_str()`, so the only copies left are
//! in migration text, which cannot call Rust. These tests hold that text to the domain:
//! the `events.status` CHECK of both ledgers lists exactly `SaleStatus::ALL`, and the
//! names PostgreSQL's commit function writes are the domain's names for its move.

use std::collections::BTreeSet;
use std::path::Path;

use boxoffice_domain::exchange::{ListingState, SwapState};
use boxoffice_domain::transfers::TransferState;
use boxoffice_domain::{OrderEvent, OrderState, SaleStatus};

fn migration(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// SQL without its `--` comments, so prose never counts as schema.
fn code(sql: &str) -> String {
    sql.lines()
        .map(|l| l.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The quoted names of the first `… IN ('a', 'b')` after `prefix`.
fn check_list(sql: &str, prefix: &str) -> BTreeSet<String> {
    let at = sql
        .find(prefix)
        .unwrap_or_else(|| panic!("no `{prefix}` in the migration"));
    let rest = &sql[at + prefix.len()..];
    let list = rest.split(')').next().unwrap_or("");
    list.split(',')
        .map(|n| n.trim().trim_matches('\'').to_string())
        .collect()
}

/// The quoted literals right after `prefix` (each followed by ", " or what ends it).
fn literals_after(sql: &str, prefix: &str, n: usize) -> Vec<String> {
    let at = sql
        .find(prefix)
        .unwrap_or_else(|| panic!("no `{prefix}` in the migration"));
    sql[at + prefix.len()..]
        .split(',')
        .take(n)
        .map(|l| {
            let l = l.trim();
            assert!(
                l.starts_with('\''),
                "`{prefix}` is not followed by {n} names: {l}"
            );
            l.split('\'').nth(1).unwrap_or("").to_string()
        })
        .collect()
}

#[test]
fn the_sale_status_check_of_both_ledgers_lists_exactly_the_domains_statuses() {
    let domain: BTreeSet<String> = SaleStatus::ALL.iter().map(|s| s.as_str().into()).collect();
    for ledger in ["sqlite/0001_ledger.sql", "postgres/0001_ledger.sql"] {
        let listed = check_list(&code(&migration(ledger)), "CHECK (status IN (");
        assert_eq!(listed, domain, "{ledger}: the events.status CHECK");
    }
}

#[test]
fn the_postgres_commit_function_writes_the_domains_names_for_a_commit() {
    // 0008 replaced the function of 0002 (without its outbox notice).
    let file = code(&migration("postgres/0008_ticket_transfers.sql"));
    let start = file
        .find("FUNCTION ledger_commit_batch")
        .expect("0008 replaces the commit function");
    let sql = &file[start..];
    let sql = &sql[..sql.find("$$;").expect("the function's end")];
    let move_to = literals_after(sql, "UPDATE orders SET state = ", 1);
    assert_eq!(move_to, [OrderState::Committed.as_str()]);
    let move_from = literals_after(sql, "AND state = ", 1);
    assert_eq!(move_from, [OrderState::Authorized.as_str()]);
    let history = literals_after(sql, "VALUES (o.id, ", 3);
    let expected = [
        OrderState::Authorized.as_str(),
        OrderState::Committed.as_str(),
        OrderEvent::Committed.as_str(),
    ];
    assert_eq!(history, expected, "the order_events line of a commit");
    assert!(
        !sql.contains("INSERT INTO outbox"),
        "the commit writes no outbox row of its own: the history trigger does"
    );
    // The move the function performs is the domain's commit move.
    assert_eq!(
        OrderState::Authorized.apply(OrderEvent::Committed),
        Ok(OrderState::Committed)
    );
}

#[test]
fn the_transfer_state_check_of_both_ledgers_lists_exactly_the_domains_states() {
    for ledger in [
        "sqlite/0007_ticket_transfers.sql",
        "postgres/0008_ticket_transfers.sql",
    ] {
        let listed = check_list(&code(&migration(ledger)), "CHECK (state IN (");
        let want: BTreeSet<String> = TransferState::ALL
            .iter()
            .map(|s| s.as_str().into())
            .collect();
        assert_eq!(listed, want, "{ledger}: the ticket_transfers.state CHECK");
    }
}

#[test]
fn the_migration_readers_find_what_they_look_for() {
    let sql =
        "a TEXT CHECK (x IN ('p', 'q')), -- CHECK (x IN ('z'))\nVALUES (o.id, 'a', 'b', 'c', t)";
    assert_eq!(
        check_list(sql, "CHECK (x IN ("),
        BTreeSet::from(["p".into(), "q".into()])
    );
    assert_eq!(literals_after(sql, "VALUES (o.id, ", 3), ["a", "b", "c"]);
    assert!(!code(sql).contains("'z'"));
}

#[test]
fn the_exchange_state_checks_of_both_ledgers_list_exactly_the_domains_states() {
    let listings: BTreeSet<String> = ListingState::ALL
        .iter()
        .map(|s| s.as_str().into())
        .collect();
    let swaps: BTreeSet<String> = SwapState::ALL.iter().map(|s| s.as_str().into()).collect();
    for ledger in ["sqlite/0011_exchange.sql", "postgres/0012_exchange.sql"] {
        let sql = code(&migration(ledger));
        let listed = check_list(&sql, "CHECK (state IN (");
        assert_eq!(
            listed, listings,
            "{ledger}: the exchange_listings.state CHECK"
        );
        let swaps_table = &sql[sql.find("CREATE TABLE exchange_swaps").expect("the swaps")..];
        let listed = check_list(swaps_table, "CHECK (state IN (");
        assert_eq!(listed, swaps, "{ledger}: the exchange_swaps.state CHECK");
    }
}
