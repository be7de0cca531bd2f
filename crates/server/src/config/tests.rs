//! Reading the layers, and refusing what cannot work.

use super::*;

#[test]
fn flags_override_the_file_and_defaults_fill_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boxoffice.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:9000\"\n[engine]\npoll_after_ms = 1234\n",
    )
    .unwrap();
    let flags = Overrides {
        data_dir: Some("/tmp/x".into()),
        ..Default::default()
    };
    let c = Config::load(Some(&file), &flags).unwrap();
    assert_eq!(c.listen.port(), 9000);
    assert_eq!(c.engine.poll_after_ms, 1234);
    assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
    assert!(c.sqlite.group_commit);
}

#[test]
fn only_configuration_variables_are_read_from_the_environment() {
    assert!(
        is_config_key("ENGINE__POLL_AFTER_MS")
            && is_config_key("operator_key")
            && is_config_key("LEDGER")
    );
    assert!(
        !is_config_key("LOG")
            && !is_config_key("CONFIG")
            && !is_config_key("TEST_POSTGRES_URL")
            && !is_config_key("ledgerx")
    );
}

#[test]
fn the_payment_provider_has_no_default_and_names_only_the_two_providers() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boxoffice.toml");
    std::fs::write(&file, "").unwrap();
    let none = Config::load(Some(&file), &Overrides::default()).unwrap();
    assert_eq!(none.payments, None);
    std::fs::write(&file, "payments = \"fake\"\n").unwrap();
    let fake = Config::load(Some(&file), &Overrides::default()).unwrap();
    assert_eq!(fake.payments, Some(PaymentsChoice::Fake));
    std::fs::write(&file, "payments = \"paypal\"\n").unwrap();
    assert!(Config::load(Some(&file), &Overrides::default()).is_err());
}

#[test]
fn trusted_proxies_are_read_as_cidrs_and_a_bad_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boxoffice.toml");
    let text = "[http]\ntrusted_proxies = [\"10.0.0.0/8\", \"2001:db8::/32\"]\n";
    std::fs::write(&file, text).unwrap();
    let c = Config::load(Some(&file), &Overrides::default()).unwrap();
    assert_eq!(c.http.trusted_proxies.len(), 2);
    assert_eq!(
        c.http.max_streams, 10_000,
        "the other keys keep their defaults"
    );
    std::fs::write(&file, "[http]\ntrusted_proxies = [\"10.0.0.0/33\"]\n").unwrap();
    assert!(Config::load(Some(&file), &Overrides::default()).is_err());
}

#[test]
fn an_unknown_key_is_an_error_not_a_silent_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boxoffice.toml");
    std::fs::write(&file, "lisen = \"127.0.0.1:9000\"\n").unwrap();
    assert!(Config::load(Some(&file), &Overrides::default()).is_err());
}

fn load_text(text: &str) -> anyhow::Result<Config> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("boxoffice.toml");
    std::fs::write(&file, text).unwrap();
    Config::load(Some(&file), &Overrides::default())
}

#[test]
fn a_wrong_choice_is_refused_naming_the_allowed_values() {
    let e = format!("{:#}", load_text("payments = \"paypal\"\n").unwrap_err());
    assert!(e.contains("fake") && e.contains("stripe"), "{e}");
    let e = format!("{:#}", load_text("ledger = \"mysql://db\"\n").unwrap_err());
    assert!(e.contains("\"sqlite\" or a postgres:// URL"), "{e}");
    let e = format!("{:#}", load_text("hot = \"memcached\"\n").unwrap_err());
    assert!(e.contains("\"memory\" or redis://"), "{e}");
    let e = format!("{:#}", load_text("log_format = \"xml\"\n").unwrap_err());
    assert!(e.contains("text") && e.contains("json"), "{e}");
    let c = load_text("ledger = \"postgres://db/x\"\nhot = \"redis://a,redis://b\"\n").unwrap();
    assert_eq!(c.ledger, LedgerChoice::Postgres("postgres://db/x".into()));
    assert_eq!(c.hot, HotChoice::Redis("redis://a,redis://b".into()));
    assert!(!c.embedded());
    assert!(!c.sole_on_its_ledger());
}

#[test]
fn a_config_prints_without_its_secrets() {
    let c = load_text(
        "operator_key = \"op-key-that-is-long-enough\"\n\
         ledger = \"postgres://app:pg-password@db/boxoffice\"\n\
         hot = \"rediss://:redis-password@cache:6380\"\n\
         [stripe]\nsecret_key = \"sk_live_secret\"\nwebhook_secret = \"whsec_secret\"\n\
         [fake_payments]\nwebhook_secret = \"whsec_fake_secret\"\n\
         [nats]\nurl = \"nats://nats-token@events:4222\"\n",
    )
    .unwrap();
    assert_eq!(c.stripe.secret_key.expose(), "sk_live_secret");
    let printed = format!("{c:?} {c:#?}");
    for secret in [
        "op-key-that-is-long-enough",
        "pg-password",
        "redis-password",
        "sk_live_secret",
        "whsec_secret",
        "whsec_fake_secret",
        "nats-token",
    ] {
        assert!(!printed.contains(secret), "{secret} printed in {printed}");
    }
    assert!(printed.contains("[redacted]"), "{printed}");
}

#[test]
fn a_short_operator_key_is_refused_saying_the_minimum() {
    let e = format!("{:#}", load_text("operator_key = \"short\"\n").unwrap_err());
    assert!(e.contains("at least 16 characters (it has 5)"), "{e}");
    assert!(load_text("operator_key = \"0123456789abcdef\"\n").is_ok());
}

#[test]
fn worker_periods_live_under_workers_and_must_be_positive() {
    let c = load_text("[workers]\nheartbeat_interval_ms = 500\nreplay_prune_interval_ms = 7\n")
        .unwrap();
    assert_eq!(c.workers.heartbeat_interval_ms, 500);
    assert_eq!(c.workers.replay_prune_interval_ms, 7);
    assert_eq!(
        c.workers.expiry_interval_ms, 1_000,
        "the others keep defaults"
    );
    let e = format!(
        "{:#}",
        load_text("[workers]\nexpiry_interval_ms = 0\n").unwrap_err()
    );
    assert!(e.contains("workers.expiry_interval_ms"), "{e}");
    let e = format!(
        "{:#}",
        load_text("[workers]\nheartbeat_interval_ms = 6000\n").unwrap_err()
    );
    assert!(e.contains("node_dead_after_ms"), "{e}");
}

#[test]
fn a_claims_lease_is_at_most_a_day_and_at_most_the_retention() {
    let c = load_text("[idempotency]\nlease_ms = 86400000\n").unwrap();
    assert_eq!(c.idempotency.lease_ms, 86_400_000);
    for text in [
        "[idempotency]\nlease_ms = 86400001\nretention_s = 999999\n",
        "[idempotency]\nlease_ms = 9223372036854775807\n",
        "[idempotency]\nlease_ms = 61000\nretention_s = 60\n",
    ] {
        let e = format!("{:#}", load_text(text).unwrap_err());
        assert!(e.contains("idempotency.lease_ms"), "{text}: {e}");
    }
}

/// The engine learns how long a PostgreSQL ledger's statement may run (an event's
/// cancellation waits it out between passes); the SQLite ledger has no such wait.
#[test]
fn the_engine_is_told_the_postgres_statement_timeout_and_no_one_else_sets_it() {
    let pg = load_text(
        "ledger = \"postgres://localhost/db\"\n[postgres]\nstatement_timeout_ms = 45000\n",
    )
    .unwrap();
    assert_eq!(pg.engine_config().ledger_statement_timeout_ms, 45_000);
    let sqlite = load_text("[postgres]\nstatement_timeout_ms = 45000\n").unwrap();
    assert_eq!(sqlite.engine_config().ledger_statement_timeout_ms, 0);
    let set = load_text("[engine]\nledger_statement_timeout_ms = 1\n").unwrap();
    assert_eq!(
        set.engine_config().ledger_statement_timeout_ms,
        0,
        "not read"
    );
}

#[test]
fn store_timings_are_read_from_their_sections() {
    let c = load_text(
        "[redis]\nresponse_timeout_ms = 250\nload_ttl_s = 60\n[sqlite]\nbusy_timeout_ms = 900\n",
    )
    .unwrap();
    let connect = c.redis.connect(None);
    assert_eq!(connect.response_timeout.as_millis(), 250);
    assert_eq!(connect.connect_timeout.as_millis(), 2_000);
    assert_eq!(c.redis.arbiter().load_ttl.as_secs(), 60);
    assert_eq!(c.sqlite.busy_timeout().as_millis(), 900);
}

/// A load chunk over Lua's limit on a call's values made every load and rebuild of an
/// event fail in cluster mode, so no event could open; it is refused at start-up now.
#[test]
fn a_redis_load_chunk_lua_cannot_take_is_refused() {
    for (text, setting) in [
        ("[redis]\nload_chunk = 5000\n", "redis.load_chunk"),
        ("[redis]\nload_chunk = 0\n", "redis.load_chunk"),
        (
            "[redis]\nresponse_timeout_ms = 0\n",
            "redis.response_timeout_ms",
        ),
    ] {
        let e = format!("{:#}", load_text(text).unwrap_err());
        assert!(e.contains(setting), "{text}: {e}");
    }
    let c = load_text("[redis]\nload_chunk = 2000\n").unwrap();
    assert_eq!(c.redis.arbiter().load_chunk, 2_000);
}

#[test]
fn serve_demo_sends_the_stand_ins_webhooks_to_itself_unless_told_otherwise() {
    let demo = Config::default().for_demo(true);
    let url = demo.fake_payments.webhook_url.as_deref();
    assert_eq!(url, Some("/v1/payments/webhook"));
    assert_eq!(
        Config::default().for_demo(false).fake_payments.webhook_url,
        None
    );
    let mut chosen = Config::default();
    chosen.fake_payments.webhook_url = Some("http://127.0.0.1:9/hook".into());
    let kept = chosen.for_demo(true).fake_payments.webhook_url;
    assert_eq!(kept.as_deref(), Some("http://127.0.0.1:9/hook"));
}

/// A PostgreSQL ledger beside an in-process hot store is embedded, but not alone on its
/// ledger: a second process on it (a rolling deploy) gave back the first's outbox
/// claims at start and drove its live exchange swaps as an earlier incarnation's.
#[test]
fn only_a_sqlite_ledger_is_known_to_have_this_process_alone() {
    let sqlite = load_text("").unwrap();
    assert!(sqlite.embedded() && sqlite.sole_on_its_ledger());
    let shared = load_text("ledger = \"postgres://app@db/boxoffice\"\n").unwrap();
    assert!(shared.embedded());
    assert!(!shared.sole_on_its_ledger());
}
