//! Tracing (ABI 1.2): what a tracer that takes every record adds to an
//! async copy, beside the same copies with no tracer, measured interleaved
//! in the same run. Each batch enqueues n 64-byte H2D copies, then
//! synchronizes, then (traced) flushes, so every activity is delivered
//! within the batch. Target (issue 14): under 300 ns more per copy. The
//! untraced cost itself is the dispatch rows' business (no tracer live: at
//! most 2 ns beside the release before tracing).
use crate::api::{check, DeviceMem, Res, Stream, H2D};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Timing};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use xdal::abi::*;
use xdal::*;

const GROUP: &str = "tracing: a tracer taking every record";

static API_RECORDS: AtomicU64 = AtomicU64::new(0);
static ACTIVITIES: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn on_api(_user: *mut c_void, _record: *const xdal_api_record_t) {
    API_RECORDS.fetch_add(1, Relaxed);
}

unsafe extern "C" fn on_activity(_user: *mut c_void, _records: *const xdal_activity_t, count: usize) {
    ACTIVITIES.fetch_add(count as u64, Relaxed);
}

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let stream = Stream::new()?;
    let s = stream.0;
    let dev = DeviceMem::touched(64)?;
    let src = [7u8; 64];
    let copies = |n: u64| {
        (0..n).try_for_each(|_| check(xdal_memcpy_async(dev.ptr, src.as_ptr().cast(), 64, H2D, s), "xdal_memcpy_async"))
    };
    let desc = xdal_tracer_desc_t {
        struct_size: std::mem::size_of::<xdal_tracer_desc_t>(),
        api: Some(on_api),
        activity: Some(on_activity),
        user_data: null_mut(),
        activity_mask: 0,
    };
    let (plain, traced) = timing.measure_pair(
        |n| timed(|| copies(n).and_then(|()| stream.sync())),
        |n| {
            let mut tracer = null_mut();
            check(xdal_tracer_create(&mut tracer, &desc), "xdal_tracer_create")?;
            let elapsed = timed(|| {
                copies(n)?;
                stream.sync()?;
                check(xdal_tracer_flush(tracer), "xdal_tracer_flush")
            });
            check(xdal_tracer_destroy(tracer), "xdal_tracer_destroy")?;
            elapsed
        },
    )?;
    if ACTIVITIES.load(Relaxed) == 0 || API_RECORDS.load(Relaxed) == 0 {
        return Err("the tracer received no records".into());
    }
    rows.push(Row::new(GROUP, "64 B xdal_memcpy_async H2D, n then sync, no tracer", Unit::NsPerOp, &plain));
    rows.push(
        Row::new(GROUP, "the same with a tracer (every API record and activity)", Unit::NsPerOp, &traced)
            .vs("no tracer", &plain)
            .by_difference()
            .goal(Goal::DiffBelow(300.0)),
    );
    Ok(())
}
