//! `boxoffice rehearse` against a real server: a small on-sale (1,000 buyers, 100
//! seats, a few seconds) whose report agrees with the ledger, oversells nothing,
//! leaves a clean audit and draws every chart; `--find-rate` converging on a
//! server whose capacity is held down on purpose (few requests in flight, a slow
//! payment provider); and anti-bot layers switched off then on, each against the
//! adversary it is meant to meet, the layer removing what that adversary gained.

use std::path::{Path, PathBuf};
use std::time::Duration;

use boxoffice_rehearse::rehearse::crowd::{Adversaries, Arrivals, Mix, Profile};
use boxoffice_rehearse::rehearse::find_rate::{self, Search};
use boxoffice_rehearse::rehearse::report::{ProfileRow, Report};
use boxoffice_rehearse::rehearse::{self, AuditHook, Settings, html};
use boxoffice_testkit::harness::process::Said;
use boxoffice_testkit::harness::{path_str, uuid};
use tokio::process::Child;

use crate::common::BOXOFFICE;

pub(crate) const OPERATOR: &str = "rehearsal-operator-key-0123";

/// A config for a rehearsed server: fast admission ticks and polls, payments that
/// settle by themselves (3-D Secure through the stand-in's webhook, timeouts through a
/// quick recovery sweep), and the generator's forwarded addresses believed.
pub(crate) fn config(dir: &Path, http: &str, provider: &str) -> PathBuf {
    let file = dir.join(format!("boxoffice-{}.toml", uuid()));
    let text = format!(
        "operator_key = \"{OPERATOR}\"\npayments = \"fake\"\n\
         [engine]\nadmission_interval_ms = 200\npoll_after_ms = 500\nrecovery_after_s = 1\n\
         [workers]\nrecovery_interval_ms = 300\nexpiry_interval_ms = 200\n\
         [fake_payments]\nwebhook_url = \"/v1/payments/webhook\"\n{provider}\
         [http]\ntrusted_proxies = [\"127.0.0.1/32\"]\n{http}"
    );
    std::fs::write(&file, text).unwrap();
    file
}

/// A server on `dir` with the rehearsal config, and the hook that audits its data once
/// the recovery sweep has settled every order: (the process, its base URL, what it
/// writes on stderr, the hook).
pub(crate) async fn audited_server(dir: &Path) -> (Child, String, Said, AuditHook) {
    let cfg = config(dir, "", "");
    let args = [
        "--data-dir".to_owned(),
        path_str(dir).to_owned(),
        "--config".to_owned(),
        path_str(&cfg).to_owned(),
    ];
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (server, base, said) = BOXOFFICE.start_said(&argv).await;
    let hook: AuditHook = Box::new(move || {
        Box::pin(async move {
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let (_, report) = BOXOFFICE.settled_audit(&argv).await;
            Ok(report)
        })
    });
    (server, base, said, hook)
}

pub(crate) fn settings(base: String, buyers: u32) -> Settings {
    Settings {
        targets: vec![base],
        operator_key: OPERATOR.into(),
        seats: 100,
        hold_ttl_s: 10,
        event_rate_per_s: 100,
        arrivals: Arrivals {
            buyers,
            rush_share: 0.3,
            rush_s: 1.0,
            tail_tau_s: 1.0,
            tail_s: 3.0,
        },
        mix: Mix {
            think_min_ms: 50,
            think_max_ms: 300,
            ..Mix::default()
        },
        adversaries: Adversaries {
            aggressive_pollers: 0.03,
            many_sessions: 0.02,
            sessions_each: 3,
            no_backoff: 0.03,
            pow_bots: 0.03,
            ..Adversaries::default()
        },
        max_duration: Duration::from_secs(120),
        max_requests: 200_000,
        settle: Duration::from_secs(30),
        linger: Duration::from_secs(15),
        progress: false,
        ..Settings::default()
    }
}

/// `mix` with every hold paid for, with a card that approves: the seats all sell.
pub(crate) fn every_card_approves(mix: Mix) -> Mix {
    Mix {
        abandon: 0.0,
        release: 0.0,
        approve: 1.0,
        decline: 0.0,
        three_ds: 0.0,
        timeout: 0.0,
        ..mix
    }
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_small_rehearsal_reports_what_the_ledger_sold_with_a_clean_audit_and_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, base, said, hook) = audited_server(dir.path()).await;
    let report = rehearse::run(&settings(base, 1_000), Some(hook), std::future::pending())
        .await
        .unwrap();
    let (html_file, json_file) = rehearse::write(&report, &dir.path().join("report")).unwrap();
    eprintln!(
        "sold {:?}, buyers {:?}, errors {:?}, fairness ρ {:?}, bots {:?}",
        report.sold,
        report.buyers,
        report.errors,
        report.fairness.arrival_vs_admission,
        report.fairness.bots
    );

    assert_eq!(
        report.stopped, None,
        "every buyer finished within the bounds"
    );
    assert_eq!(report.buyers.planned, 1_000);
    let audit = report.audit.as_ref().expect("the audit ran");
    assert!(
        audit.clean,
        "the audit after the rehearsal: {}",
        audit.report
    );
    let sold = &report.sold;
    assert_eq!(sold.capacity, 100);
    assert!(sold.hot_store > 0, "something sold: {sold:?}");
    assert!(sold.hot_store <= sold.capacity, "oversold: {sold:?}");
    assert_eq!(
        sold.ledger,
        Some(sold.hot_store),
        "the ledger and the event's counts agree"
    );
    assert_eq!(
        sold.by_buyers, sold.hot_store,
        "buyers were told of every sale and no other"
    );
    assert!(report.buyers.admitted > 0 && report.fairness.bots.adversaries > 0);
    let failed: Vec<_> = (report.errors.iter())
        .filter(|(k, _)| k.starts_with("3-D Secure") || k.contains(" 5") || k.contains("no answer"))
        .collect();
    assert!(
        failed.is_empty(),
        "answers no buyer should meet: {failed:?}; the server said:\n{}",
        said.lock()
    );

    let page = std::fs::read_to_string(html_file).unwrap();
    for chart in html::CHARTS {
        assert!(
            page.contains(&format!("<svg id=\"{chart}\"")),
            "no {chart} in the page"
        );
    }
    assert!(!page.contains("<script"), "the page runs no script");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json_file).unwrap()).unwrap();
    assert_eq!(json["sold"]["ledger"], serde_json::json!(sold.hot_store));
    assert!(
        json["steps"].as_array().is_some_and(|s| s.len() >= 5),
        "{}",
        json["steps"]
    );
    assert!(
        json["node_figures"]["holds_per_s"]
            .as_f64()
            .is_some_and(|h| h > 0.0)
    );
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_crowd_signed_in_ahead_sends_no_sign_in_during_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, base, _said, hook) = audited_server(dir.path()).await;
    let s = Settings {
        signed_in: true,
        ..settings(base, 300)
    };
    let report = rehearse::run(&s, Some(hook), std::future::pending())
        .await
        .unwrap();
    let steps: Vec<&str> = report.steps.iter().map(|s| s.name).collect();
    assert!(
        !steps.contains(&"sign-in"),
        "signed in during the run: {steps:?}"
    );
    assert!(steps.contains(&"join"), "{steps:?}");
    assert_eq!(report.buyers.joined, 300, "{:?}", report.buyers);
    let sold = &report.sold;
    assert!(
        sold.hot_store > 0 && sold.by_buyers == sold.hot_store,
        "{sold:?}"
    );
    assert!(report.audit.as_ref().expect("the audit ran").clean);
}

/// The stand-in bank's page answers 50 requests a second and tells the rest to come back
/// (429, Retry-After): a crowd paying through 3-D Secure faster than that presses
/// "approve" again when asked, and every payment settles (before, a buyer told "busy"
/// left their order waiting, and their seats held, until the run ended).
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn buyers_told_the_bank_page_is_busy_press_again_and_every_payment_settles() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, base, _said, hook) = audited_server(dir.path()).await;
    let base_settings = settings(base, 400);
    let s = Settings {
        seats: 2_000,
        event_rate_per_s: 1_000,
        arrivals: Arrivals {
            buyers: 400,
            rush_share: 1.0,
            rush_s: 0.5,
            tail_tau_s: 0.1,
            tail_s: 0.1,
        },
        mix: Mix {
            approve: 0.0,
            three_ds: 1.0,
            ..every_card_approves(base_settings.mix.clone())
        },
        adversaries: Adversaries::default(),
        signed_in: true,
        ..base_settings
    };
    let report = rehearse::run(&s, Some(hook), std::future::pending())
        .await
        .unwrap();
    eprintln!("buyers {:?}, errors {:?}", report.buyers, report.errors);
    let busy: u64 = (report.errors.iter())
        .filter(|(k, _)| k.starts_with("3-D Secure 429"))
        .map(|(_, n)| n)
        .sum();
    assert!(
        busy > 0,
        "the bank page was never busy: {:?}",
        report.errors
    );
    let outcomes = &report.buyers.outcomes;
    assert_eq!(outcomes.get("unsettled"), None, "{outcomes:?}");
    assert!(
        outcomes.get("bought").copied().unwrap_or(0) >= 300,
        "{outcomes:?}"
    );
    let sold = &report.sold;
    assert!(
        sold.hot_store > 0 && sold.by_buyers == sold.hot_store,
        "{sold:?}"
    );
    assert!(report.audit.as_ref().expect("the audit ran").clean);
}

#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn the_rate_search_converges_below_a_capacity_held_down_on_purpose() {
    let dir = tempfile::tempdir().unwrap();
    // Eight requests in flight at most, and every checkout waits 2 × 150 ms for the
    // provider: fewer than 8 / 0.3 s ≈ 27 checkouts a second, and beyond it 503s.
    let cfg = config(dir.path(), "max_in_flight = 8\n", "latency_ms = 150\n");
    let argv = [
        "--data-dir",
        path_str(dir.path()),
        "--config",
        path_str(&cfg),
    ];
    let (_server, base) = BOXOFFICE.start(&argv).await;
    let mut base_settings = settings(base, 0);
    base_settings.seats = 400;
    base_settings.hold_ttl_s = 30;
    // Everyone waits in the pre-opening pool, so what loads the server is what the
    // admission rate lets through: holds and checkouts with cards that approve.
    base_settings.arrivals.rush_share = 1.0;
    base_settings.mix = Mix {
        think_min_ms: 0,
        think_max_ms: 0,
        ..every_card_approves(Mix::default())
    };
    base_settings.adversaries = Adversaries::default();
    base_settings.linger = Duration::ZERO;
    let search = Search {
        start: 5,
        factor: 2.0,
        max: 320,
        refine: 1,
        seconds_per_run: 3.0,
        min_buyers: 20,
        hold_p99_ms: 1_000.0,
        checkout_p99_ms: 3_000.0,
        max_failure_rate: 0.03,
    };
    let found = find_rate::search(&base_settings, &search, || false)
        .await
        .unwrap();
    for t in &found.trials {
        eprintln!("{t:?}");
    }
    let rate = found.rate.expect("some rate met the objectives");
    assert!(
        rate < 160,
        "capacity is about 20 checkouts/s, yet {rate}/s passed"
    );
    assert!(
        found.trials.iter().any(|t| !t.passed && t.rate > rate),
        "a faster rate was tried and failed"
    );
}

/// A crowd of `buyers` with only the adversaries given, for more seats than it can buy
/// (so what an adversary gets is what the layers let it have, not the luck of the
/// line), whose cards all approve: each honest buyer's a card of their own.
fn layer_settings(base: String, buyers: u32, adversaries: Adversaries) -> Settings {
    Settings {
        seats: buyers * 5,
        mix: Mix {
            think_min_ms: 0,
            think_max_ms: 100,
            own_cards: true,
            ..every_card_approves(Mix::default())
        },
        adversaries,
        linger: Duration::from_secs(2),
        ..settings(base, buyers)
    }
}

fn row(report: &Report, profile: Profile) -> &ProfileRow {
    (report.fairness.profiles.iter())
        .find(|p| p.profile == profile)
        .unwrap_or_else(|| panic!("no {profile:?} in {:?}", report.fairness.profiles))
}

async fn layered_server(dir: &Path) -> (Child, String) {
    let cfg = config(dir, "", "");
    let argv = ["--data-dir", path_str(dir), "--config", path_str(&cfg)];
    BOXOFFICE.start(&argv).await
}

/// A line-sitter waits once and hands its buyer token and admission token to three
/// clients that make keys of their own: with proofs of possession off the clients buy
/// on the sitter's place in line (the per-buyer limit, 4, for every sitter); with
/// proofs required every hold of theirs is refused as made with another key, and the
/// sitter's identity buys nothing, while honest buyers buy as before.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_shared_admission_buys_with_proofs_of_possession_off_and_nothing_with_them_required() {
    use boxoffice_domain::possession::PopMode;
    let dir = tempfile::tempdir().unwrap();
    let (_server, base) = layered_server(dir.path()).await;
    let sharers = Adversaries {
        token_sharers: 0.1,
        clients_each: 3,
        ..Adversaries::default()
    };
    let mut report = Vec::new();
    for proofs in [PopMode::Off, PopMode::Required] {
        let s = Settings {
            proofs,
            ..layer_settings(base.clone(), 200, sharers.clone())
        };
        let r = rehearse::run(&s, None, std::future::pending())
            .await
            .unwrap();
        let (sitters, honest) = (row(&r, Profile::TokenSharer), row(&r, Profile::Honest));
        eprintln!(
            "{proofs:?}: sitters {sitters:?}, honest {honest:?}, outcomes {:?}, errors {:?}",
            r.buyers, r.errors
        );
        assert_eq!(
            r.stopped, None,
            "{proofs:?}: the run finished within its bounds"
        );
        assert!(
            sitters.buyers >= 5,
            "{proofs:?}: too few sitters drawn: {sitters:?}"
        );
        assert_eq!(
            sitters.admitted, sitters.buyers,
            "{proofs:?}: every sitter let in"
        );
        assert!(honest.bought > honest.buyers / 2, "{proofs:?}: {honest:?}");
        report.push(r);
    }
    let (off, on) = (&report[0], &report[1]);
    let limit = off.settings["max_per_buyer"].as_u64().unwrap();
    let sitters = row(off, Profile::TokenSharer);
    assert_eq!(
        sitters.tickets,
        sitters.buyers * limit,
        "proofs off: each sitter's clients buy the limit on its one place in line"
    );
    let gain = sitters.advantage.as_ref().unwrap().ticket_ratio.unwrap();
    assert!(
        gain > 1.0,
        "proofs off: the sitters out-buy honest buyers: {gain}"
    );
    let sitters = row(on, Profile::TokenSharer);
    assert_eq!(
        sitters.tickets, 0,
        "proofs required: a client without the sitter's key buys nothing"
    );
    assert_eq!(
        sitters.advantage.as_ref().unwrap().ticket_ratio,
        Some(0.0),
        "proofs required: the gain is gone"
    );
    let mismatches = on.errors.get("hold 401 proof_key_mismatch").copied();
    assert!(
        mismatches.is_some_and(|n| n >= sitters.buyers),
        "every client's hold refused as another key's: {:?}",
        on.errors
    );
}

/// A farm of five accounts on one device and one card: without velocity rules every
/// account buys the limit; with the default rules the card's cluster refuses the third
/// account (two accounts' worth per farm) while no honest buyer, each with a card and a
/// network of their own, is refused.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn an_account_farm_on_one_card_is_cut_to_two_accounts_by_the_default_buyer_signals() {
    use boxoffice_domain::velocity::VelocityRules;
    let dir = tempfile::tempdir().unwrap();
    let (_server, base) = layered_server(dir.path()).await;
    let farms = Adversaries {
        farms: 0.05,
        sessions_each: 5,
        ..Adversaries::default()
    };
    let mut report = Vec::new();
    for velocity in [None, Some(VelocityRules::default())] {
        let s = Settings {
            velocity: velocity.clone(),
            ..layer_settings(base.clone(), 200, farms.clone())
        };
        let r = rehearse::run(&s, None, std::future::pending())
            .await
            .unwrap();
        let on = velocity.is_some();
        assert_eq!(
            r.stopped, None,
            "velocity {on}: the run finished within its bounds"
        );
        let (farm, honest) = (row(&r, Profile::Farm), row(&r, Profile::Honest));
        eprintln!(
            "velocity {on}: farms {farm:?}, honest {honest:?}, errors {:?}",
            r.errors
        );
        assert!(farm.buyers >= 3, "too few farms drawn: {farm:?}");
        assert!(
            honest.bought > honest.buyers / 2,
            "velocity {on}: {honest:?}"
        );
        report.push(r);
    }
    let limit = 4;
    let farm = row(&report[0], Profile::Farm);
    assert_eq!(
        farm.tickets,
        farm.buyers * 5 * limit,
        "velocity off: every account of every farm buys the limit"
    );
    let farm = row(&report[1], Profile::Farm);
    assert_eq!(
        farm.tickets,
        farm.buyers * 2 * limit,
        "velocity on: two accounts per card, the third refused"
    );
    // Exactly three refusals a farm: no honest buyer was refused.
    let refused = report[1]
        .errors
        .get("checkout 403 too_many_buyers")
        .copied();
    assert_eq!(
        refused,
        Some(farm.buyers * 3),
        "three accounts of each farm refused, nobody else: {:?}",
        report[1].errors
    );
}

/// A reselling scalper buys the limit, then tries to sell it on: moves each ticket to
/// another identity of its own, renames it, and lists it above face value. With free
/// transfers and no exchange every ticket moves (a sale off the platform goes
/// through); with names at checkout, transfers only through the exchange and the
/// exchange's face-value cap, none moves, none is renamed, none is listed above face
/// value and no markup is asked: all it can do is sell at what it paid.
#[boxoffice_testkit::test(flavor = "multi_thread", worker_threads = 2, timeout_s = 300)]
async fn a_reselling_scalper_moves_its_tickets_under_free_transfers_and_gains_no_markup_under_the_rules()
 {
    use boxoffice_domain::attendees::AttendeeNames;
    use boxoffice_domain::transfers::TransferPolicy;
    let dir = tempfile::tempdir().unwrap();
    let (_server, base) = layered_server(dir.path()).await;
    let scalpers = Adversaries {
        scalpers: 0.1,
        ..Adversaries::default()
    };
    let mut report = Vec::new();
    for (names, transfers, exchange) in [
        (AttendeeNames::Off, TransferPolicy::Free, false),
        (
            AttendeeNames::AtCheckout,
            TransferPolicy::ExchangeOnly,
            true,
        ),
    ] {
        let s = Settings {
            names,
            transfers: Some(transfers),
            exchange,
            ..layer_settings(base.clone(), 100, scalpers.clone())
        };
        let r = rehearse::run(&s, None, std::future::pending())
            .await
            .unwrap();
        let (scalper, honest) = (row(&r, Profile::Scalper), row(&r, Profile::Honest));
        eprintln!(
            "{transfers:?}: scalpers {scalper:?}, honest {honest:?}, errors {:?}",
            r.errors
        );
        assert_eq!(r.stopped, None, "{transfers:?}: within its bounds");
        assert!(scalper.buyers >= 3, "too few scalpers drawn: {scalper:?}");
        assert!(
            honest.bought > honest.buyers / 2,
            "{transfers:?}: {honest:?}"
        );
        let resale = scalper.resale.clone().expect("the scalpers' resale line");
        assert_eq!(u64::from(resale.tickets), scalper.tickets, "{resale:?}");
        assert!(resale.tickets > 0, "the scalpers bought: {resale:?}");
        assert!(
            row(&r, Profile::Honest).resale.is_none(),
            "only scalpers resell"
        );
        report.push(resale);
    }
    let (free, rules) = (&report[0], &report[1]);
    assert_eq!(
        free.transferred, free.tickets,
        "free transfers: every ticket moved to the other identity: {free:?}"
    );
    assert_eq!((free.listed_above_face, free.markup), (0, 0), "{free:?}");
    assert_eq!(
        free.refused.get("list above face exchange_not_available"),
        Some(&free.tickets),
        "{free:?}"
    );
    assert_eq!(
        (
            rules.transferred,
            rules.renamed,
            rules.listed_above_face,
            rules.markup
        ),
        (0, 0, 0, 0),
        "the rules leave no move, no new name and no markup: {rules:?}"
    );
    for code in [
        "transfer transfers_exchange_only",
        "rename name_changes_not_allowed",
        "list above face listing_above_face_value",
    ] {
        assert_eq!(
            rules.refused.get(code),
            Some(&rules.tickets),
            "{code} for every ticket: {rules:?}"
        );
    }
    assert_eq!(
        rules.listed_at_face, rules.tickets,
        "at face value it may resell: {rules:?}"
    );
}
