//! Prints the source of a hot script as Redis receives it (generated prelude included),
//! for bench/redis-script-cost.sh: `script_source hold` (SeatArbiter::hold) or
//! `script_source claimed-hold` (ClaimedHolds::hold).

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let source = match which.as_str() {
        "hold" => boxoffice_store_redis::hold_script_source(),
        "claimed-hold" => boxoffice_store_redis::claimed_hold_script_source(),
        _ => {
            eprintln!("usage: script_source hold|claimed-hold");
            std::process::exit(2);
        }
    };
    print!("{source}");
}
