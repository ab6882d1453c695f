//! Front dispatch overhead: one operation through the C ABI (argument
//! checks, handle lookup, the table call) against the fake backend's table
//! entry called directly with native handles made through the table
//! itself. Both figures are ns per call; the row's comparison is their
//! difference, the front's cost. Batches of the two alternate.
//!
//! For the operations that enqueue work (copy, record, launch) only the
//! calls are timed, on a gated stream (`gate.rs`), on both sides alike.
use crate::api::{
    check, check_query, check_raw, empty_function, empty_kernel, DeviceMem, Event, Res, Stream, H2D, ONE,
};
use crate::gate::{gated_calls, Gate};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Samples, Timing};
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use xdal::abi::*;
use xdal::*;

const GROUP: &str = "front dispatch overhead";
const REFERENCE: &str = "fake table entry, called directly";

/// Native objects made through the fake backend's table, released on drop.
struct Native {
    table: &'static xdal_backend_v1_t,
    stream: xdal_backend_stream_t,
    event: xdal_backend_event_t,
    memory: *mut c_void,
    function: xdal_backend_function_t,
}

/// A table entry, or an error naming it.
macro_rules! entry {
    ($table:expr, $name:ident) => {
        $table.$name.ok_or(concat!("the fake backend's table has no ", stringify!($name)))?
    };
}

impl Native {
    fn new() -> Res<Native> {
        let mut table: *const xdal_backend_v1_t = null();
        // SAFETY: `table` is valid storage for one pointer.
        let status =
            unsafe { xdal_fake::xdal_fake_backend_get_v1(XDAL_ABI_VERSION_MAJOR, XDAL_ABI_VERSION_MINOR, &mut table) };
        check_raw(status, "xdal_fake_backend_get_v1")?;
        // SAFETY: on success the getter wrote a pointer to its static table,
        // valid and unchanged for the life of the process.
        let table: &'static xdal_backend_v1_t = unsafe { &*table };
        let mut native =
            Native { table, stream: null_mut(), event: null_mut(), memory: null_mut(), function: null_mut() };
        // SAFETY: all four are entries of the backend's own table, given
        // what the front would give them: device 0 (which exists), valid
        // flags and priority, non-zero size, a non-NULL kernel, and valid
        // storage for the output.
        unsafe {
            check_raw(entry!(table, stream_create)(0, XDAL_STREAM_DEFAULT, 0, &mut native.stream), "stream_create")?;
            check_raw(entry!(table, event_create)(0, XDAL_EVENT_DISABLE_TIMING, &mut native.event), "event_create")?;
            check_raw(entry!(table, mem_alloc)(0, 4096, &mut native.memory), "mem_alloc")?;
            check_raw(
                entry!(table, function_from_host)(Some(empty_kernel), &mut native.function),
                "function_from_host",
            )?;
        }
        Ok(native)
    }

    fn sync(&self) -> Res<()> {
        // SAFETY: a live stream made by this table's stream_create.
        check_raw(unsafe { entry!(self.table, stream_synchronize)(self.stream) }, "stream_synchronize")
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        let t = self.table;
        // SAFETY: each handle was made by this table (or is NULL, which is
        // skipped) and is released once; the stream is drained first.
        unsafe {
            if let (false, Some(sync), Some(destroy)) = (self.stream.is_null(), t.stream_synchronize, t.stream_destroy)
            {
                sync(self.stream);
                destroy(self.stream);
            }
            if let (false, Some(destroy)) = (self.event.is_null(), t.event_destroy) {
                destroy(self.event);
            }
            if let (false, Some(free)) = (self.memory.is_null(), t.mem_free) {
                free(0, self.memory);
            }
            if let (false, Some(release)) = (self.function.is_null(), t.function_release) {
                release(self.function);
            }
        }
    }
}

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    if crate::api::backend_name() != c"fake" {
        // The reference is the fake backend's own table: against another
        // backend the difference would not be the front's.
        eprint!(" (skipped: the reference is the fake backend's table; XDAL_BACKEND is not fake)");
        return Ok(());
    }
    let native = Native::new()?;
    let t = native.table;
    let (stream, event, dev, function) =
        (Stream::new()?, Event::new(XDAL_EVENT_DISABLE_TIMING)?, DeviceMem::touched(4096)?, empty_function()?);
    let (s, e, ns, ne) = (stream.0, event.0, native.stream, native.event);
    let src = [5u8; 64];
    let src = src.as_ptr().cast::<c_void>();
    let mut add = |name: &str, (front, direct): (Samples, Samples)| {
        rows.push(
            Row::new(GROUP, name, Unit::NsPerOp, &front)
                .vs(REFERENCE, &direct)
                .by_difference()
                .goal(Goal::DiffBelow(20.0)),
        );
    };

    let query = entry!(t, stream_query);
    add(
        "xdal_stream_query, idle stream",
        timing.measure_pair(
            |n| timed(|| (0..n).try_for_each(|_| check_query(xdal_stream_query(s), "xdal_stream_query"))),
            // SAFETY: a live native stream of this table.
            |n| timed(|| (0..n).try_for_each(|_| check_raw(unsafe { query(ns) }, "stream_query"))),
        )?,
    );

    let copy = entry!(t, mem_copy_async);
    let kind = xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_DEVICE;
    add(
        "xdal_memcpy_async 64 B H2D (enqueue only)",
        timing.measure_pair(
            |n| {
                gated_calls(
                    n,
                    || check(xdal_memcpy_async(dev.ptr, src, 64, H2D, s), "xdal_memcpy_async"),
                    || Gate::front(s),
                    || stream.sync(),
                )
            },
            |n| {
                gated_calls(
                    n,
                    // SAFETY: 64 bytes inside a live 4 KiB allocation of this
                    // table, from a live 64-byte host buffer, on a live
                    // native stream; the kind matches the pointers.
                    || check_raw(unsafe { copy(native.memory, src, 64, kind, ns) }, "mem_copy_async"),
                    || native.gate(),
                    || native.sync(),
                )
            },
        )?,
    );

    let record = entry!(t, event_record);
    add(
        "xdal_event_record (enqueue only)",
        timing.measure_pair(
            |n| {
                gated_calls(
                    n,
                    || check(xdal_event_record(e, s), "xdal_event_record"),
                    || Gate::front(s),
                    || stream.sync(),
                )
            },
            |n| {
                // SAFETY: a live native event and stream of this table.
                gated_calls(
                    n,
                    || check_raw(unsafe { record(ne, ns) }, "event_record"),
                    || native.gate(),
                    || native.sync(),
                )
            },
        )?,
    );

    let launch = entry!(t, launch_kernel);
    add(
        "xdal_launch_kernel empty 1x1x1 (enqueue only)",
        timing.measure_pair(
            |n| {
                gated_calls(
                    n,
                    || check(xdal_launch_kernel(function, ONE, ONE, 0, s, null(), 0), "xdal_launch_kernel"),
                    || Gate::front(s),
                    || stream.sync(),
                )
            },
            |n| {
                gated_calls(
                    n,
                    // SAFETY: a live native function and stream of this table,
                    // valid dimensions, no shared memory, no arguments (which
                    // the empty kernel takes).
                    || check_raw(unsafe { launch(native.function, ONE, ONE, 0, ns, null(), 0) }, "launch_kernel"),
                    || native.gate(),
                    || native.sync(),
                )
            },
        )?,
    );
    launch_rates(timing, rows, &native, &stream, function)
}

/// Empty 1x1x1 launches, n then a synchronize (execution included),
/// through the C ABI and through the fake's table called directly, on a
/// quiet process and with busy threads competing for the cores in the same
/// run (issue 17: CI machines are often loaded, and a launch path that
/// wakes or waits on other threads suffers most there). ns per launch;
/// the comparison is the ratio.
fn launch_rates(
    timing: &Timing,
    rows: &mut Vec<Row>,
    native: &Native,
    stream: &Stream,
    function: xdal_function_t,
) -> Res<()> {
    let launch = entry!(native.table, launch_kernel);
    let (s, ns) = (stream.0, native.stream);
    let busy = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
    for (load, threads) in [("quiet", 0), ("with busy threads", busy)] {
        let _competition = Competition::start(threads);
        let (front, direct) = timing.measure_pair(
            |n| {
                timed(|| {
                    for _ in 0..n {
                        check(xdal_launch_kernel(function, ONE, ONE, 0, s, null(), 0), "xdal_launch_kernel")?;
                    }
                    stream.sync()
                })
            },
            |n| {
                timed(|| {
                    for _ in 0..n {
                        // SAFETY: as for the enqueue-only row above.
                        check_raw(unsafe { launch(native.function, ONE, ONE, 0, ns, null(), 0) }, "launch_kernel")?;
                    }
                    native.sync()
                })
            },
        )?;
        let what = if threads == 0 {
            "empty launch 1x1x1, n then sync, quiet".to_string()
        } else {
            format!("empty launch 1x1x1, n then sync, {threads} busy threads")
        };
        rows.push(
            Row::new(GROUP, what, Unit::NsPerOp, &front)
                .vs(format!("{REFERENCE}, {load}"), &direct)
                .goal(Goal::RatioAtMost(1.05)),
        );
    }
    Ok(())
}

/// Threads that keep the cores busy (arithmetic, no memory traffic) until
/// dropped.
struct Competition {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Competition {
    fn start(count: usize) -> Competition {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..count)
            .map(|i| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = i as u64 | 1;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for _ in 0..1000 {
                            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                        }
                    }
                })
            })
            .collect();
        Competition { stop, threads }
    }
}

impl Drop for Competition {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Native {
    /// A gate at the head of the native stream.
    fn gate(&self) -> Res<Gate> {
        let enqueue = entry!(self.table, launch_host_func);
        Gate::new(|wait| {
            // SAFETY: a live native stream of this table and a host
            // function that takes no argument.
            check_raw(unsafe { enqueue(self.stream, Some(wait), null_mut()) }, "launch_host_func")
        })
    }
}
