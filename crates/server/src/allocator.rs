//! The allocator's one setting for a node: memory the process freed stays with it for
//! reuse instead of going back to the kernel.
//!
//! mimalloc gives freed memory back to the kernel a second after it is freed. Memory
//! asked for again is then faulted in afresh, and the kernel zeroes every page of it on
//! first touch (2 MiB at a time where transparent huge pages are on). A node's tables grow
//! all through an on-sale (each doubling frees the table it replaces, the replay records
//! expire), so on the hold path a node spent several per cent of its CPU zeroing memory
//! it had freed a moment before (docs/BENCHMARKS.md, "Memory freed and faulted in
//! again"). A node's resident memory therefore stays at its peak. `MIMALLOC_PURGE_DELAY`
//! in the environment (milliseconds; mimalloc's own variable, which it reads itself)
//! leaves the choice to mimalloc, for an operator who wants memory back after a quiet
//! spell.

/// `mi_option_purge_delay`: its place in `mi_option_t` in the mimalloc (v3) that
/// `libmimalloc-sys` builds, which names no constant for it. Pinned by the test below,
/// through the option's default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The process's start: the allocator's setting while the process has one thread, then
/// `main` on the multi-thread runtime `#[tokio::main]` builds. `boxoffice` and the
/// benchmarks' baselines start alike.
pub fn start<F: std::future::Future>(main: F) -> std::io::Result<F::Output> {
    keep_freed_memory();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(main))
}

/// Called by `start`, before the runtime starts any thread.
fn keep_freed_memory() {
    if operator_chose() {
        return;
    }
    // SAFETY: sets one of mimalloc's process-wide options (a plain store, read whenever
    // mimalloc considers a purge); called while the process has one thread, so nothing
    // reads it meanwhile.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) }
}

/// Whether the environment sets the purge delay, as mimalloc reads it: its variable's
/// name in any case, or the older `MIMALLOC_RESET_DELAY`.
fn operator_chose() -> bool {
    std::env::vars_os().any(|(name, _)| {
        name.to_str().is_some_and(|n| {
            n.eq_ignore_ascii_case("MIMALLOC_PURGE_DELAY")
                || n.eq_ignore_ascii_case("MIMALLOC_RESET_DELAY")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_the_purge_delay_and_freed_memory_is_kept() {
        // SAFETY: reads a process-wide option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if !operator_chose() {
            // mimalloc v3's default purge delay, in milliseconds: no other option of
            // `mi_option_t` has it, so the index names the purge delay.
            assert_eq!(get(), 1000);
            keep_freed_memory();
            assert_eq!(get(), -1);
        }
    }
}
