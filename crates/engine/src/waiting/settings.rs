//! Per-event waiting-room settings, kept in the queue store so every node reads the
//! same ones: the eligibility and bot rules, the operator's admission control, and the
//! rate the last tick chose (with its reason). Stored as JSON under fixed names.

use std::collections::HashMap;

use boxoffice_domain::Millis;
use boxoffice_domain::admission::{RateReason, Thresholds};
use boxoffice_domain::human_check::HumanCheck;
use boxoffice_domain::pow::MAX_DIFFICULTY;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::EngineError;

pub(crate) const RULES: &str = "rules";
pub(crate) const CONTROL: &str = "admission";
pub(crate) const RATE: &str = "rate";
pub(crate) const SEED: &str = "seed";

/// The settings an operator sets by hand (rules, admission control): a deployment
/// whose queue store lives in-process keeps these on disk so a restart keeps them.
pub const OPERATOR_SETTINGS: [&str; 2] = [RULES, CONTROL];

/// Who may join, and what joining costs. Each field omitted keeps its default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WaitingRules {
    /// Only buyers whose token says `verified` may join.
    pub require_verified: bool,
    /// Only accounts created before this instant may join.
    pub accounts_created_before: Option<Millis>,
    /// Leading zero bits a proof of work needs; 0 = none.
    #[schema(maximum = 32)]
    pub pow_difficulty: u8,
    /// The line is told sold out once no more than this many seats are neither sold
    /// nor held (0: only when none are left).
    pub sold_out_margin: u32,
    /// Admission waits while this many admitted shoppers are still active.
    #[schema(minimum = 1)]
    pub max_active_shoppers: Option<u32>,
    /// Admission follows the seats left: a batch lets in at most this many buyers for
    /// each seat neither sold nor held (absent: the rate alone decides), twice as many
    /// for every two poll pauses in which the seats let in for stay untaken or nothing
    /// is free, half as many again each time half of the seats let in for have been
    /// taken.
    #[schema(minimum = 1)]
    pub buyers_per_free_seat: Option<u32>,
    /// The human check at joining. Absent: the proof of work when `pow_difficulty` is
    /// above 0, else none. `proof_of_work` needs `pow_difficulty` of at least 1;
    /// `none` and `hosted` need it at 0 (one check per event).
    pub human_check: Option<HumanCheck>,
}

impl WaitingRules {
    pub fn validate(&self) -> Result<(), EngineError> {
        if self.pow_difficulty > MAX_DIFFICULTY {
            return Err(EngineError::Invalid(format!(
                "pow_difficulty must be at most {MAX_DIFFICULTY}"
            )));
        }
        match (self.human_check, self.pow_difficulty) {
            (Some(HumanCheck::ProofOfWork), 0) => {
                return Err(EngineError::Invalid(
                    "human_check proof_of_work needs pow_difficulty of at least 1".into(),
                ));
            }
            (Some(HumanCheck::None | HumanCheck::Hosted { .. }), d) if d > 0 => {
                return Err(EngineError::Invalid(
                    "an event asks one human check: with human_check none or hosted, \
                     pow_difficulty must be 0"
                        .into(),
                ));
            }
            _ => {}
        }
        if self.max_active_shoppers == Some(0) {
            return Err(EngineError::Invalid(
                "max_active_shoppers must be at least 1 (or absent)".into(),
            ));
        }
        if self.buyers_per_free_seat == Some(0) {
            return Err(EngineError::Invalid(
                "buyers_per_free_seat must be at least 1 (or absent)".into(),
            ));
        }
        Ok(())
    }
}

impl WaitingRules {
    /// The check a join must pass, with the rules written before `human_check`
    /// existed read as they were: a proof of work when a difficulty is set.
    pub fn human_check(&self) -> HumanCheck {
        match self.human_check {
            Some(HumanCheck::ProofOfWork) | None if self.pow_difficulty > 0 => {
                HumanCheck::ProofOfWork
            }
            Some(HumanCheck::Hosted {
                provider,
                when_down,
            }) => HumanCheck::Hosted {
                provider,
                when_down,
            },
            _ => HumanCheck::None,
        }
    }
}

/// Whether admission follows a fixed rate or adapts to downstream health.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdmissionMode {
    /// The event's configured rate (or the override).
    #[default]
    Fixed,
    /// Narrows and widens with downstream health, up to the base rate.
    Adaptive,
}

/// The operator's say over admission (PUT /v1/events/{id}/admission). Each field
/// omitted keeps its default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AdmissionControl {
    pub mode: AdmissionMode,
    /// Replaces the event's configured rate as the base (buyers per second).
    #[schema(minimum = 1)]
    pub rate_per_s: Option<u32>,
    /// Adaptive thresholds; absent = the engine's defaults.
    pub thresholds: Option<Thresholds>,
}

/// The admission rate the last tick chose, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CurrentRate {
    pub rate_per_s: u32,
    pub reason: RateReason,
}

/// The settings of one event, parsed; a missing or unreadable one takes its default
/// (a store that lost them degrades to the configured behaviour).
pub(crate) struct EventSettings {
    pub rules: WaitingRules,
    pub control: AdmissionControl,
    pub rate: Option<CurrentRate>,
    /// The adaptive mode's last step that changed `rate` (kept beside it in the same
    /// setting).
    pub rate_step: Option<RateStep>,
    pub seed: Option<String>,
}

/// The stored form of the rate setting: the rate and, once the adaptive mode changed
/// it, that step. Every node of a cluster reads it, so the adaptive mode steps once per
/// admission interval whichever nodes tick (`Engine::choose_rate`).
#[derive(Serialize, Deserialize)]
pub(crate) struct StoredRate {
    #[serde(flatten)]
    pub rate: CurrentRate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<RateStep>,
}

/// A step of the adaptive mode that changed the rate: when, and why (the rate's own
/// reason may since say what held a batch back instead: sold out, few seats left).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RateStep {
    pub at: Millis,
    pub reason: RateReason,
}

impl EventSettings {
    /// The rate the gate opens to at most, and why: the operator's override, or the
    /// event's own `event_rate` (the adaptive mode only narrows it).
    pub(crate) fn base_rate(&self, event_rate: u32) -> (u32, RateReason) {
        match self.control.rate_per_s {
            Some(r) => (r, RateReason::OperatorOverride),
            None => (event_rate, RateReason::Configured),
        }
    }

    pub(crate) fn parse(raw: &HashMap<String, String>, default_rules: WaitingRules) -> Self {
        fn get<T: for<'a> Deserialize<'a>>(raw: &HashMap<String, String>, name: &str) -> Option<T> {
            raw.get(name).and_then(|v| serde_json::from_str(v).ok())
        }
        let stored: Option<StoredRate> = get(raw, RATE);
        EventSettings {
            rules: get(raw, RULES).unwrap_or(default_rules),
            control: get(raw, CONTROL).unwrap_or_default(),
            rate: stored.as_ref().map(|r| r.rate),
            rate_step: stored.and_then(|r| r.step),
            seed: raw.get(SEED).cloned(),
        }
    }
}
