//! The Lua scripts, compiled into the binary from `src/lua/`. Arbiter scripts are
//! prefixed with the hold state table generated from the domain (`hold_states.rs`) and
//! `common.lua` (key names and the shared expiry/return-to-stock steps), so each atomic
//! operation is still exactly one script.

use std::sync::LazyLock;

use redis::Script;

use crate::hold_states;

macro_rules! arbiter_source {
    ($($file:literal),+) => {
        hold_states::lua_prelude()
            + concat!(include_str!("lua/common.lua"), $(include_str!(concat!("lua/", $file))),+)
    };
}

macro_rules! arbiter_script {
    ($($file:literal),+) => {
        LazyLock::new(|| Script::new(&arbiter_source!($($file),+)))
    };
}

macro_rules! plain_script {
    ($file:literal) => {
        LazyLock::new(|| Script::new(include_str!(concat!("lua/", $file))))
    };
}

pub(crate) static HOLD: LazyLock<Script> = arbiter_script!("best.lua", "hold.lua", "hold_run.lua");
pub(crate) static HOLD_CLAIMED: LazyLock<Script> = arbiter_script!(
    "best.lua",
    "hold.lua",
    "idem_claim.lua",
    "keep_outcome.lua",
    "hold_claimed.lua"
);
pub(crate) static RELEASE_CLAIMED: LazyLock<Script> =
    arbiter_script!("idem_claim.lua", "keep_outcome.lua", "release_claimed.lua");
pub(crate) static PIN: LazyLock<Script> = arbiter_script!("pin.lua");
pub(crate) static RETAKE: LazyLock<Script> = arbiter_script!("retake.lua");
pub(crate) static MOVE: LazyLock<Script> = arbiter_script!("move.lua");
pub(crate) static SEATS_SOLD: LazyLock<Script> = arbiter_script!("seats_sold.lua");
pub(crate) static SEATS_RETURNED: LazyLock<Script> = arbiter_script!("seats_returned.lua");
pub(crate) static SEAT_GIVEN: LazyLock<Script> = arbiter_script!("seat_given.lua");
pub(crate) static EXPIRE_DUE: LazyLock<Script> = arbiter_script!("expire_due.lua");
pub(crate) static READ: LazyLock<Script> = arbiter_script!("read.lua");
pub(crate) static LOAD_BEGIN: LazyLock<Script> = arbiter_script!("load_begin.lua");
pub(crate) static LOAD_SEATS: LazyLock<Script> = arbiter_script!("load_seats.lua");
pub(crate) static LOAD_BUYERS: LazyLock<Script> = arbiter_script!("load_buyers.lua");
pub(crate) static LOAD_DONE: LazyLock<Script> = arbiter_script!("load_done.lua");
pub(crate) static UNLOAD: LazyLock<Script> = arbiter_script!("unload.lua");
pub(crate) static CLAIM: LazyLock<Script> = arbiter_script!("claim.lua");

pub(crate) static LEASE: LazyLock<Script> = plain_script!("lease.lua");
pub(crate) static LEASE_RELEASE: LazyLock<Script> = plain_script!("lease_release.lua");
pub(crate) static LEASE_RENEW: LazyLock<Script> = plain_script!("lease_renew.lua");
pub(crate) static QUEUE_RESTORE: LazyLock<Script> = plain_script!("queue_restore.lua");
pub(crate) static QUEUE_JOIN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/queue_join.lua"),
        include_str!("lua/queue_join_run.lua")
    ))
});
pub(crate) static JOIN_CLAIMED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/idem_claim.lua"),
        include_str!("lua/queue_join.lua"),
        include_str!("lua/join_claimed.lua")
    ))
});
pub(crate) static QUEUE_ADVANCE: LazyLock<Script> = plain_script!("queue_advance.lua");
pub(crate) static QUEUE_SEAL: LazyLock<Script> = plain_script!("queue_seal.lua");
pub(crate) static QUEUE_PLACE: LazyLock<Script> = plain_script!("queue_place.lua");
pub(crate) static QUEUE_FINISH: LazyLock<Script> = plain_script!("queue_finish.lua");
pub(crate) static QUEUE_REMEMBER_CHECK: LazyLock<Script> =
    plain_script!("queue_remember_check.lua");
pub(crate) static IDEM_BEGIN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("lua/idem_claim.lua"),
        include_str!("lua/idem_begin.lua")
    ))
});
pub(crate) static IDEM_FINISH: LazyLock<Script> = plain_script!("idem_finish.lua");
pub(crate) static IDEM_ABANDON: LazyLock<Script> = plain_script!("idem_abandon.lua");
pub(crate) static IDEM_PRUNE: LazyLock<Script> = plain_script!("idem_prune.lua");
pub(crate) static VELOCITY_CHECK: LazyLock<Script> = plain_script!("velocity_check.lua");
pub(crate) static VELOCITY_RECORD: LazyLock<Script> = plain_script!("velocity_record.lua");
pub(crate) static VELOCITY_LINK: LazyLock<Script> = plain_script!("velocity_link.lua");
pub(crate) static VELOCITY_LINK_ALL: LazyLock<Script> = plain_script!("velocity_link_all.lua");
pub(crate) static VELOCITY_TAKE: LazyLock<Script> = plain_script!("velocity_take.lua");
pub(crate) static PROOF_FIRST_USE: LazyLock<Script> = plain_script!("proof_first_use.lua");

/// Every script, loaded into a Redis as a node connects to it. A script sent without
/// waiting for its answer (the stored answer of a hold or a release) must not meet
/// NOSCRIPT: the client would load it and send it again later, in the background,
/// while a retry of the same request found the claim still in flight and was refused.
static ALL: [&LazyLock<Script>; 38] = [
    &HOLD,
    &HOLD_CLAIMED,
    &RELEASE_CLAIMED,
    &PIN,
    &RETAKE,
    &MOVE,
    &SEATS_SOLD,
    &SEATS_RETURNED,
    &SEAT_GIVEN,
    &EXPIRE_DUE,
    &READ,
    &LOAD_BEGIN,
    &LOAD_SEATS,
    &LOAD_BUYERS,
    &LOAD_DONE,
    &UNLOAD,
    &CLAIM,
    &LEASE,
    &LEASE_RELEASE,
    &LEASE_RENEW,
    &QUEUE_RESTORE,
    &QUEUE_JOIN,
    &JOIN_CLAIMED,
    &QUEUE_ADVANCE,
    &QUEUE_SEAL,
    &QUEUE_PLACE,
    &QUEUE_FINISH,
    &QUEUE_REMEMBER_CHECK,
    &IDEM_BEGIN,
    &IDEM_FINISH,
    &IDEM_ABANDON,
    &IDEM_PRUNE,
    &VELOCITY_CHECK,
    &VELOCITY_RECORD,
    &VELOCITY_LINK,
    &VELOCITY_LINK_ALL,
    &VELOCITY_TAKE,
    &PROOF_FIRST_USE,
];

/// Loads every script into the Redis behind `conn` (`SCRIPT LOAD`; idempotent).
pub(crate) async fn load_all<C: redis::aio::ConnectionLike>(
    conn: &mut C,
) -> redis::RedisResult<()> {
    for script in ALL {
        let _: String = script.prepare_invoke().load_async(conn).await?;
    }
    Ok(())
}

/// The SHA-1 of every script, as `SCRIPT EXISTS` takes them.
pub fn hashes() -> Vec<&'static str> {
    ALL.iter().map(|s| s.get_hash()).collect()
}

static HOLD_SOURCE: LazyLock<String> =
    LazyLock::new(|| arbiter_source!("best.lua", "hold.lua", "hold_run.lua"));
static HOLD_CLAIMED_SOURCE: LazyLock<String> = LazyLock::new(|| {
    arbiter_source!(
        "best.lua",
        "hold.lua",
        "idem_claim.lua",
        "keep_outcome.lua",
        "hold_claimed.lua"
    )
});

/// The hold script's source, for measuring it with `redis-benchmark` (benches/).
pub fn hold_script_source() -> &'static str {
    &HOLD_SOURCE
}

/// The claim + hold script's source (`ClaimedHolds::hold`), for measuring it outside
/// the engine (bench/redis-script-cost.sh).
pub fn claimed_hold_script_source() -> &'static str {
    &HOLD_CLAIMED_SOURCE
}
