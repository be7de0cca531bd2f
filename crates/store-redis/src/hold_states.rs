//! The hold state machine as the Lua scripts see it. The legal moves are defined once,
//! by `HoldState::apply` in the domain (docs/ARCHITECTURE.md §3); every arbiter script
//! starts with a table generated from it here, so the scripts test legality with
//! `MOVES[move][state]` and never spell a transition of their own. The conformance
//! cases `moves_out_of_order_are_refused` and `retried_moves_answer_with_the_hold_as_it_is`
//! (testkit's arbiter suite) hold this backend and the in-process one to the same table.

use std::fmt::Write;

use boxoffice_domain::HoldState;
use boxoffice_domain::hold::HoldMove;

/// A state's one-letter code in a hold record (`lua/common.lua` describes the record).
pub(crate) fn code(state: HoldState) -> char {
    match state {
        HoldState::Held => 'H',
        HoldState::CheckingOut => 'C',
        HoldState::PaymentPending => 'P',
        HoldState::Sold => 'S',
        HoldState::Released => 'R',
        HoldState::Expired => 'E',
    }
}

pub(crate) fn from_code(text: &str) -> Option<HoldState> {
    HoldState::ALL
        .into_iter()
        .find(|&s| text.len() == 1 && text.starts_with(code(s)))
}

/// A move's key in the scripts' `MOVES` table (and the `move` argument of move.lua).
pub(crate) fn move_name(by: HoldMove) -> &'static str {
    match by {
        HoldMove::Checkout => "checkout",
        HoldMove::PaymentUncertain => "payment_uncertain",
        HoldMove::Commit => "commit",
        HoldMove::Release => "release",
        HoldMove::Expire => "expire",
        HoldMove::Retake => "retake",
    }
}

/// The Lua that opens every arbiter script: `MOVES[move][from] = to` for every legal
/// move and `LIVE[state] = true` for the states that keep seats from other buyers.
pub(crate) fn lua_prelude() -> String {
    let mut lua = String::from(
        "-- Generated from the domain's HoldState::apply by hold_states.rs: the legal hold\n\
         -- moves, MOVES[move][from] = to, and the live states.\nlocal MOVES = {\n",
    );
    for by in HoldMove::ALL {
        let legal: Vec<String> = (HoldState::ALL.into_iter())
            .filter_map(|from| Some((from, from.apply(by).ok()?)))
            .map(|(from, to)| format!("{} = '{}'", code(from), code(to)))
            .collect();
        let _ = writeln!(lua, "  {} = {{ {} }},", move_name(by), legal.join(", "));
    }
    let live: Vec<String> = (HoldState::ALL.into_iter())
        .filter(|s| s.is_live())
        .map(|s| format!("{} = true", code(s)))
        .collect();
    let _ = writeln!(lua, "}}\nlocal LIVE = {{ {} }}", live.join(", "));
    lua
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_code_reads_back_as_its_state() {
        for s in HoldState::ALL {
            assert_eq!(from_code(&code(s).to_string()), Some(s));
        }
        assert_eq!(from_code("HC"), None);
        assert_eq!(from_code(""), None);
    }

    /// The table read back: (move, from, to) for every entry.
    fn entries(lua: &str) -> Vec<(String, char, char)> {
        let mut out = Vec::new();
        for line in lua
            .lines()
            .filter(|l| l.contains(" = { ") && l.ends_with("},"))
        {
            let (name, rest) = line.trim().split_once(" = { ").unwrap();
            for pair in rest
                .trim_end_matches(" },")
                .split(", ")
                .filter(|p| !p.is_empty())
            {
                let b = pair.as_bytes();
                out.push((name.to_string(), b[0] as char, b[5] as char));
            }
        }
        out
    }

    #[test]
    fn the_scripts_table_is_exactly_the_domains_legal_moves() {
        let table = entries(&lua_prelude());
        for by in HoldMove::ALL {
            for from in HoldState::ALL {
                let listed = table
                    .iter()
                    .find(|(m, f, _)| m == move_name(by) && *f == code(from))
                    .map(|(_, _, to)| *to);
                assert_eq!(
                    listed,
                    from.apply(by).ok().map(code),
                    "{by:?} from {from:?}"
                );
            }
        }
        assert!(lua_prelude().contains("local LIVE = { H = true, C = true, P = true }"));
    }
}
