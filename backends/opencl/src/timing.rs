//! `time_next_enqueue`: the times a traced operation ran, from OpenCL's
//! own profiling of its command (the queues are created with profiling on),
//! moved onto `CLOCK_MONOTONIC`, the clock of `xdal_get_timestamp_ns`. A
//! host function is timed by the thread that runs it.
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::OnceLock;

thread_local! {
    /// The slots the thread asked for its next command to write (0: none).
    static NEXT: Cell<usize> = const { Cell::new(0) };
}

/// Whether any thread ever asked for times: until one does, `take` reads
/// no thread-local (which in a shared library is a call of its own on
/// every command).
static ASKED: AtomicBool = AtomicBool::new(false);

/// Times this thread's next operation; 0 cancels.
pub(crate) fn time_next(slots: usize) {
    if slots != 0 {
        ASKED.store(true, Relaxed);
    }
    NEXT.set(slots);
}

/// Whether any thread ever asked for times: until then `take` is 0 on
/// every thread, without a look at the thread's own slots.
#[inline]
pub(crate) fn asked() -> bool {
    ASKED.load(Relaxed)
}

/// The slots this thread's next operation writes, taken (0: none).
#[inline]
pub(crate) fn take() -> usize {
    // Relaxed: a thread sees its own earlier store; another thread's slots
    // are never this thread's to take.
    if !asked() {
        return 0;
    }
    NEXT.replace(0)
}

/// For an operation that enqueues no command (a launch with nothing to
/// do, or refused): its times are now, if they were asked for.
pub(crate) fn no_command() {
    now(take());
}

/// Writes now as both times to `slots`, if there are any (0: none): for an
/// operation that ran no command, or none with an event to read.
pub(crate) fn now(slots: usize) {
    if slots != 0 {
        let now = monotonic_ns();
        write(slots, now, now);
    }
}

pub(crate) use xdal_backend_support::clock::monotonic_ns;

/// Writes `start` then `end` to the two slots at `slots`.
pub(crate) fn write(slots: usize, start: u64, end: u64) {
    let slots = slots as *const AtomicU64;
    // SAFETY: the front keeps both slots alive (in memory that never moves
    // or goes away) until the second is written.
    unsafe {
        (*slots).store(start, Relaxed);
        (*slots.add(1)).store(end.max(start).max(1), Release);
    }
}

/// What a device's profiling clock must have added to read
/// `CLOCK_MONOTONIC`, measured once per device. From
/// `clGetDeviceAndHostTimer` where the device has it (OpenCL 2.1); else
/// from a marker's end as profiled beside the monotonic clock read when its
/// wait returns, which is the same clock on runtimes that profile with it
/// (PoCL does: the two then agree within the wait's wake-up, and the
/// offset is taken as 0). None where neither works.
fn offset(device: usize) -> Option<i128> {
    static OFFSETS: OnceLock<Vec<Option<i128>>> = OnceLock::new();
    let offsets = OFFSETS.get_or_init(|| {
        let cl = crate::opencl();
        (0..cl.devices.len()).map(|d| measure_offset(cl.device(d))).collect()
    });
    offsets.get(device).copied().flatten()
}

/// How far two clocks may read apart and still be taken for one.
const SAME_CLOCK_NS: i128 = 10_000_000;

fn measure_offset(device: &crate::device::ClDevice) -> Option<i128> {
    let before = monotonic_ns();
    if let Ok([device_ns, _]) = cl3::device::get_device_and_host_timer(device.id) {
        let after = monotonic_ns();
        return Some(i128::from(before / 2 + after / 2) - i128::from(device_ns));
    }
    // SAFETY: the device's own queue is live; an empty wait list.
    let marker =
        unsafe { cl3::command_queue::enqueue_marker_with_wait_list(device.queue, 0, std::ptr::null()) }.ok()?;
    let marker = crate::event::ClEvent(marker);
    cl3::command_queue::flush(device.queue).ok()?;
    cl3::event::wait_for_events(&[marker.0]).ok()?;
    let seen = i128::from(monotonic_ns());
    let end = match cl3::event::get_event_profiling_info(marker.0, cl3::event::CL_PROFILING_COMMAND_END).ok()? {
        cl3::info_type::InfoType::Ulong(ns) => i128::from(ns),
        _ => return None,
    };
    let offset = seen - end;
    Some(if offset.abs() < SAME_CLOCK_NS { 0 } else { offset })
}

struct Watch {
    slots: usize,
    offset: Option<i128>,
}

/// Has `event`'s command, once complete, write its start and end into
/// `slots`. Where the profiling clock cannot be mapped, or the command
/// fails, both are the time the completion is seen.
pub(crate) fn watch(event: cl3::types::cl_event, device: usize, slots: usize) {
    let watch = Box::into_raw(Box::new(Watch { slots, offset: offset(device) }));
    let set = cl3::event::set_event_callback(event, cl3::event::CL_COMPLETE, times_ready, watch.cast());
    if set.is_err() {
        // SAFETY: the runtime refused the callback: the box is still ours.
        drop(unsafe { Box::from_raw(watch) });
        let now = monotonic_ns();
        write(slots, now, now);
    }
}

extern "C" fn times_ready(event: cl3::types::cl_event, status: i32, watch: *mut c_void) {
    // SAFETY: `watch` is the box `watch` leaked for this one callback.
    let watch = unsafe { Box::from_raw(watch.cast::<Watch>()) };
    let profiled = |what| match cl3::event::get_event_profiling_info(event, what) {
        Ok(cl3::info_type::InfoType::Ulong(ns)) => Some(i128::from(ns)),
        _ => None,
    };
    let times = (status == cl3::event::CL_COMPLETE).then_some(watch.offset).flatten().and_then(|offset| {
        let start = profiled(cl3::event::CL_PROFILING_COMMAND_START)? + offset;
        let end = profiled(cl3::event::CL_PROFILING_COMMAND_END)? + offset;
        Some((u64::try_from(start).ok()?, u64::try_from(end).ok()?))
    });
    let (start, end) = times.unwrap_or_else(|| {
        let now = monotonic_ns();
        (now, now)
    });
    write(watch.slots, start, end);
}
