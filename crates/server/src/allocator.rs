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

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The process's allocator: mimalloc, asked as C's `malloc` asks it (`mi_malloc`)
/// whenever a word-aligned block will do, which is nearly every Rust allocation. The
/// `mimalloc` crate asks for every block with its alignment (`mi_malloc_aligned`), and
/// for a block over 1 KiB that is mimalloc's generic path: the block is over-allocated
/// by the alignment less one and looked up again in the larger size. A request's boxed
/// futures and hyper's buffers are such blocks. Every block mimalloc hands out is
/// aligned to a word, so for those the plain call gives the same kind of block the
/// short way; larger alignments are still asked for as they are.
pub struct Allocator;

/// The alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: every block comes from mimalloc with at least the layout's size and
// alignment (its own blocks are word-aligned, and larger alignments are asked for), and
// is freed and resized by mimalloc.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation calls take any size and a power-of-two alignment.
        unsafe { new_block(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe { new_block(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` is a block of this allocator, so of mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a block of this allocator, so of mimalloc, made with
        // `layout`'s alignment, which the resized block keeps.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

/// A block for `layout` from `plain` when a word-aligned block will do, else from
/// `aligned`.
///
/// # Safety
/// `plain` and `aligned` are mimalloc's allocation calls.
#[inline]
unsafe fn new_block(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: the caller gives mimalloc's calls, which take any size and a power-of-two
    // alignment.
    unsafe {
        if layout.align() <= WORD {
            plain(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align()).cast()
        }
    }
}

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
    fn every_block_has_its_layouts_alignment_and_keeps_its_bytes_when_resized() {
        let sizes = [
            1,
            7,
            8,
            24,
            100,
            1_000,
            1_025,
            1_752,
            4_096,
            70_000,
            3 << 20,
        ];
        for align in [1, 2, 4, 8, 16, 32, 64, 4_096] {
            for size in sizes {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is written within its size,
                // resized with its layout and freed once with the layout it has then.
                unsafe {
                    let zeroed = Allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0, "zeroed {size} at {align}");
                    assert!((0..size).all(|i| *zeroed.add(i) == 0), "{size} zeroed");
                    Allocator.dealloc(zeroed, layout);
                    let mut p = Allocator.alloc(layout);
                    assert_eq!(p as usize % align, 0, "{size} at {align}");
                    for new_size in [size / 2 + 1, size * 3] {
                        for i in 0..size {
                            *p.add(i) = (i % 251) as u8;
                        }
                        let old = Layout::from_size_align(size, align).unwrap();
                        let q = Allocator.realloc(p, old, new_size);
                        assert_eq!(q as usize % align, 0, "{size} to {new_size} at {align}");
                        let kept = size.min(new_size);
                        assert!((0..kept).all(|i| *q.add(i) == (i % 251) as u8));
                        let back = Allocator.realloc(
                            q,
                            Layout::from_size_align(new_size, align).unwrap(),
                            size,
                        );
                        assert!((0..kept).all(|i| *back.add(i) == (i % 251) as u8));
                        assert_eq!(back as usize % align, 0);
                        // The next round resizes the block again from `size`.
                        p = back;
                    }
                    Allocator.dealloc(p, layout);
                }
            }
        }
    }

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
