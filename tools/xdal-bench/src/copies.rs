//! Copies of 64 B, 4 KiB, 1 MiB and 256 MiB, host to device, device to
//! host and device to device, synchronous (`xdal_memcpy`) and asynchronous
//! (`xdal_memcpy_async`); and a 64 B copy into the middle of a 1 GiB
//! allocation against one into a 4 KiB allocation.
//!
//! Reference: `std::ptr::copy_nonoverlapping` of the same size between two
//! pre-touched, page-aligned host buffers, in the same process. Small copies are
//! reported in ns per copy, 1 MiB and up in GB/s (bytes copied / time).
use crate::api::{check, DeviceMem, HostMem, Res, Stream, D2D, D2H, H2D};
use crate::gate::{gated_calls, Gate};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Samples, Timing};
use std::ffi::c_void;
use std::hint::black_box;
use xdal::abi::xdal_memcpy_kind_raw;
use xdal::*;

const GROUP: &str = "copies";
const SIZES: [(usize, &str); 4] = [(64, "64 B"), (4 << 10, "4 KiB"), (1 << 20, "1 MiB"), (256 << 20, "256 MiB")];
/// From this size on, figures are GB/s and each async copy is synchronized
/// on its own.
const BIG: usize = 1 << 20;

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let stream = Stream::new()?;
    for (size, label) in SIZES {
        sized(timing, rows, &stream, size, label)?;
    }
    allocation_size(timing, rows, &stream)
}

/// `n` copies of `size` bytes between two host buffers.
fn memcpy_batch(n: u64, dst: *mut c_void, src: *const c_void, size: usize) -> Res<std::time::Duration> {
    timed(|| {
        for _ in 0..n {
            // SAFETY: both buffers hold at least `size` bytes and do not
            // overlap (two distinct allocations).
            unsafe {
                std::ptr::copy_nonoverlapping(black_box(src.cast::<u8>()), black_box(dst.cast::<u8>()), black_box(size))
            };
        }
        Ok(())
    })
}

fn sized(timing: &Timing, rows: &mut Vec<Row>, stream: &Stream, size: usize, label: &str) -> Res<()> {
    let (src_host, dst_host) = (HostMem::new(size, 0x11)?, HostMem::new(size, 0x22)?);
    let (dev_a, dev_b) = (DeviceMem::touched(size)?, DeviceMem::touched(size)?);
    let reference = timing.measure(|n| memcpy_batch(n, dst_host.ptr(), src_host.ptr(), size))?;
    let reference_name = format!("memcpy {label} host->host");
    let unit = if size >= BIG { Unit::GBps { bytes: size as f64 } } else { Unit::NsPerOp };
    let directions: [(&str, *mut c_void, *const c_void, xdal_memcpy_kind_raw); 3] = [
        ("H2D", dev_a.ptr, src_host.ptr(), H2D),
        ("D2H", dst_host.ptr(), dev_a.ptr, D2H),
        ("D2D", dev_b.ptr, dev_a.ptr, D2D),
    ];
    let s = stream.0;
    for (direction, dst, src, kind) in directions {
        let sync = timing.measure(|n| {
            timed(|| {
                for _ in 0..n {
                    check(xdal_memcpy(dst, src, size, kind), "xdal_memcpy")?;
                }
                Ok(())
            })
        })?;
        let asynchronous = timing.measure(|n| {
            timed(|| {
                for _ in 0..n {
                    check(xdal_memcpy_async(dst, src, size, kind, s), "xdal_memcpy_async")?;
                    if size >= BIG {
                        stream.sync()?;
                    }
                }
                stream.sync()
            })
        })?;
        let how = if size >= BIG { "xdal_memcpy_async + synchronize each" } else { "xdal_memcpy_async, n then sync" };
        let goal = (size == 256 << 20).then_some(Goal::RatioAtLeast(0.9));
        for (name, samples) in
            [(format!("{direction} {label}, xdal_memcpy"), sync), (format!("{direction} {label}, {how}"), asynchronous)]
        {
            let mut row = Row::new(GROUP, name, unit, &samples).vs(&reference_name, &reference);
            row.goal = goal;
            rows.push(row);
        }
    }
    Ok(())
}

/// A 64 B copy into the middle of a 1 GiB allocation against the same copy
/// into a 4 KiB one: the cost of finding the allocation must not depend on
/// its size. Batches of the two alternate. The async variant times the
/// enqueue calls only (the check that finds the allocation is made there).
fn allocation_size(timing: &Timing, rows: &mut Vec<Row>, stream: &Stream) -> Res<()> {
    let src = HostMem::new(64, 0x33)?;
    let (huge, small) = (DeviceMem::new(1 << 30)?, DeviceMem::touched(4 << 10)?);
    let (into_huge, into_small) = (huge.at(512 << 20), small.at(0));
    let src = src.ptr().cast_const();
    let sync_batch = |dst: *mut c_void| {
        move |n: u64| {
            timed(|| {
                for _ in 0..n {
                    check(xdal_memcpy(dst, src, 64, H2D), "xdal_memcpy")?;
                }
                Ok(())
            })
        }
    };
    let (huge_sync, small_sync) = timing.measure_pair(sync_batch(into_huge), sync_batch(into_small))?;
    let s = stream.0;
    // Enqueue only, on a gated stream: the allocation is looked up at
    // enqueue time, and the execution's noise (another thread) stays out.
    let async_batch = |dst: *mut c_void| {
        move |n: u64| {
            gated_calls(
                n,
                || check(xdal_memcpy_async(dst, src, 64, H2D, s), "xdal_memcpy_async"),
                || Gate::front(s),
                || check(xdal_stream_synchronize(s), "xdal_stream_synchronize"),
            )
        }
    };
    let (huge_async, small_async) = timing.measure_pair(async_batch(into_huge), async_batch(into_small))?;
    let pairs: [(&str, Samples, Samples); 2] =
        [("xdal_memcpy", huge_sync, small_sync), ("xdal_memcpy_async (enqueue only)", huge_async, small_async)];
    for (how, huge, small) in pairs {
        rows.push(
            Row::new(GROUP, format!("H2D 64 B into a 1 GiB allocation (+512 MiB), {how}"), Unit::NsPerOp, &huge)
                .vs("same, into a 4 KiB allocation", &small)
                .goal(Goal::RatioAtMost(1.25)),
        );
    }
    Ok(())
}
