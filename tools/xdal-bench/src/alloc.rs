//! malloc+free of 4 KiB: plain (`xdal_malloc`/`xdal_free`) and from the
//! stream-ordered pool (`xdal_malloc_async`/`xdal_free_async` on one
//! stream), each with 1 and with 100,000 other live allocations held.
//! Reference: the C library's malloc/free of 4 KiB, with as many live
//! allocations of its own held.
use crate::api::{check, Res, Stream};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Timing};
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::hint::black_box;
use std::ptr::null_mut;
use xdal::*;

const GROUP: &str = "malloc+free 4 KiB";
const SIZE: usize = 4096;
/// The live allocations held while measuring.
const LIVE: [usize; 2] = [1, 100_000];

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let stream = Stream::new()?;
    for live in LIVE {
        let libc_held = LibcBlocks::hold(live)?;
        let reference = timing.measure(libc_malloc_free)?;
        drop(libc_held);
        let reference_name = format!("libc malloc+free, {live} live");

        let held = hold(live, |p| check(xdal_malloc(p, SIZE), "xdal_malloc"))?;
        let plain = timing.measure(|n| {
            timed(|| {
                for _ in 0..n {
                    let mut p = null_mut();
                    check(xdal_malloc(&mut p, SIZE), "xdal_malloc")?;
                    check(xdal_free(black_box(p)), "xdal_free")?;
                }
                Ok(())
            })
        })?;
        release(held, |p| check(xdal_free(p), "xdal_free"))?;
        rows.push(
            Row::new(GROUP, format!("xdal_malloc+xdal_free, {live} live"), Unit::NsPerOp, &plain)
                .vs(&reference_name, &reference),
        );

        let s = stream.0;
        let held = hold(live, |p| check(xdal_malloc_async(p, SIZE, s), "xdal_malloc_async"))?;
        stream.sync()?;
        // The batch ends with a synchronize, so the stream-ordered frees
        // are paid for inside the measurement.
        let pooled = timing.measure(|n| {
            timed(|| {
                for _ in 0..n {
                    let mut p = null_mut();
                    check(xdal_malloc_async(&mut p, SIZE, s), "xdal_malloc_async")?;
                    check(xdal_free_async(black_box(p), s), "xdal_free_async")?;
                }
                stream.sync()
            })
        })?;
        release(held, |p| check(xdal_free_async(p, s), "xdal_free_async"))?;
        stream.sync()?;
        rows.push(
            Row::new(GROUP, format!("xdal_malloc_async+xdal_free_async (pool), {live} live"), Unit::NsPerOp, &pooled)
                .vs(&reference_name, &reference)
                .goal(Goal::Below(200.0)),
        );
    }
    Ok(())
}

/// Allocates `count` blocks with `alloc` and keeps them.
fn hold(count: usize, mut alloc: impl FnMut(&mut *mut c_void) -> Res<()>) -> Res<Vec<*mut c_void>> {
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let mut p = null_mut();
        alloc(&mut p)?;
        held.push(p);
    }
    Ok(held)
}

fn release(held: Vec<*mut c_void>, mut free: impl FnMut(*mut c_void) -> Res<()>) -> Res<()> {
    held.into_iter().try_for_each(&mut free)
}

/// Blocks of 4 KiB from the C library (Rust's `System` allocator is
/// malloc/free for this size and alignment), freed on drop.
struct LibcBlocks(Vec<*mut u8>);

const LAYOUT: Layout = match Layout::from_size_align(SIZE, 16) {
    Ok(layout) => layout,
    Err(_) => panic!("bad layout"),
};

impl LibcBlocks {
    fn hold(count: usize) -> Res<LibcBlocks> {
        // SAFETY: the layout has a non-zero size.
        let blocks = LibcBlocks((0..count).map(|_| unsafe { System.alloc(LAYOUT) }).collect());
        if blocks.0.iter().any(|p| p.is_null()) {
            return Err("malloc failed".into());
        }
        Ok(blocks)
    }
}

impl Drop for LibcBlocks {
    fn drop(&mut self) {
        for &p in self.0.iter().filter(|p| !p.is_null()) {
            // SAFETY: allocated in `hold` with this layout, freed once.
            unsafe { System.dealloc(p, LAYOUT) };
        }
    }
}

/// `n` malloc+free pairs of 4 KiB from the C library.
fn libc_malloc_free(n: u64) -> Res<std::time::Duration> {
    timed(|| {
        for _ in 0..n {
            // SAFETY: the layout has a non-zero size; the block is freed
            // with the same layout, once.
            unsafe {
                let p = black_box(System.alloc(LAYOUT));
                if p.is_null() {
                    return Err("malloc failed".into());
                }
                System.dealloc(p, LAYOUT);
            }
        }
        Ok(())
    })
}
