//! The hold state machine as the Lua scripts see it. The legal moves are defined once,
//! by `HoldState::apply` in the domain (docs/ARCHITECTURE.md §3); every arbiter script
//! starts with a list generated from it here, so the scripts test legality with
//! `moved(move, state)` and never spell a transition of their own. The conformance
//! cases `moves_out_of_order_are_refused` and `retried_moves_answer_with_the_hold_as_it_is`
//! (testkit's arbiter suite) hold this backend and the in-process one to the same table.
//!
//! The list is text, not Lua tables: a script's prelude runs on every call, and building
//! eight small tables there cost about 4% of a claimed hold's instructions (callgrind),
//! for a lookup only the rarer moves make.

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

/// A move's name in the scripts' `MOVE_LIST` (and the `move` argument of move.lua).
pub(crate) fn move_name(by: HoldMove) -> &'static str {
    match by {
        HoldMove::Checkout => "checkout",
        HoldMove::PaymentUncertain => "payment_uncertain",
        HoldMove::Commit => "commit",
        HoldMove::Release => "release",
        HoldMove::Expire => "expire",
        HoldMove::Retake => "retake",
        HoldMove::Repin => "repin",
    }
}

/// The Lua that opens every arbiter script: `MOVE_LIST`, one ` move:from>to` for every
/// legal move, `moved(move, from)` reading it, and `LIVE`, the codes of the states that
/// keep seats from other buyers.
pub(crate) fn lua_prelude() -> String {
    let mut moves = String::new();
    for by in HoldMove::ALL {
        for from in HoldState::ALL {
            if let Ok(to) = from.apply(by) {
                let _ = write!(moves, " {}:{}>{}", move_name(by), code(from), code(to));
            }
        }
    }
    let live: String = (HoldState::ALL.into_iter())
        .filter(|s| s.is_live())
        .map(code)
        .collect();
    format!(
        "-- Generated from the domain's HoldState::apply by hold_states.rs: the legal hold\n\
         -- moves, ' move:from>to' each, and the live states' codes.\n\
         local MOVE_LIST = '{moves} '\n\
         local LIVE = '{live}'\n\
         -- The state `move` takes a hold in state `from` to; nil where it is not legal\n\
         -- (and for no state, as the tables answered for a record that did not parse).\n\
         local function moved(move, from)\n  \
           return from and string.match(MOVE_LIST, ' ' .. move .. ':' .. from .. '>(%a)')\n\
         end\n"
    )
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

    /// The list read back: (move, from, to) for every entry.
    fn entries(lua: &str) -> Vec<(String, char, char)> {
        let line = lua
            .lines()
            .find_map(|l| l.strip_prefix("local MOVE_LIST = '"))
            .expect("the prelude lists the moves");
        line.trim_end_matches('\'')
            .split_whitespace()
            .map(|entry| {
                let (name, pair) = entry.split_once(':').unwrap();
                let b = pair.as_bytes();
                assert_eq!((b.len(), b[1]), (3, b'>'), "{entry}");
                (name.to_string(), b[0] as char, b[2] as char)
            })
            .collect()
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
        assert!(lua_prelude().contains("local LIVE = 'HCP'"));
    }
}
