//! `time_next_enqueue`: the times a traced operation ran, from two CUDA
//! events recorded on its stream around it, moved onto `CLOCK_MONOTONIC`
//! (the clock of `xdal_get_timestamp_ns`).
//!
//! A request is thread-local and taken by the calling thread's next
//! operation (`around`). The events go to one backend thread (a host
//! function may make no CUDA call, so the stream cannot report them
//! itself), which waits for each end event in turn, and a synchronization
//! that sees work done writes its times itself (`settle`). Either reads the
//! start's distance to
//! a per-device base event, recorded on a private stream and waited for
//! between two host clock reads. `cuEventElapsedTime` gives milliseconds as
//! an `f32`, whose precision falls with the distance: the base is taken
//! again once it is more than `REBASE_NS` old, and the end is read as the
//! start plus the operation's own duration, so the error stays well under
//! a microsecond. Events are pooled per device and reused.
use crate::driver::{CUevent, CUstream, CU_STREAM_NON_BLOCKING};
use crate::error::CuResult;
use crate::stream::Stream;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

pub(crate) use xdal_backend_support::clock::monotonic_ns;

thread_local! {
    /// The slots the thread asked for its next operation to write (0: none).
    static NEXT: Cell<usize> = const { Cell::new(0) };
}

/// Whether any thread ever asked for times: until one does, `around` reads
/// no thread-local (in a shared library, a call of its own).
static ASKED: AtomicBool = AtomicBool::new(false);

/// How old a base may get before it is taken again: an `f32` of
/// milliseconds resolves 61 ns at one second.
pub(crate) const REBASE_NS: u64 = 1_000_000_000;

/// Times this thread's next operation; 0 cancels.
pub(crate) fn time_next(slots: usize) {
    if slots != 0 {
        ASKED.store(true, Relaxed);
    }
    NEXT.set(slots);
}

/// Runs `enqueue`, which enqueues one operation on `stream`, between two
/// events where this thread asked for its times.
#[inline]
pub(crate) fn around(stream: &Stream, enqueue: impl FnOnce() -> CuResult<()>) -> CuResult<()> {
    // Relaxed: a thread sees its own earlier store.
    if !ASKED.load(Relaxed) {
        return enqueue();
    }
    match NEXT.replace(0) {
        0 => enqueue(),
        slots => timed(stream, slots, enqueue),
    }
}

fn timed(stream: &Stream, slots: usize, enqueue: impl FnOnce() -> CuResult<()>) -> CuResult<()> {
    let start = record(stream);
    let result = enqueue();
    if result.is_err() {
        // Nothing ran: the front cancels the request and marks the slots
        // itself, so nothing may write them any more.
        if let Ok(start) = start {
            give_back(stream.device, start);
        }
        return result;
    }
    let end = record(stream);
    match (start, end) {
        (Ok(start), Ok(end)) => submit(Job { device: stream.device, start: Ev(start), end: Ev(end), slots }),
        (start, end) => {
            start.into_iter().chain(end).for_each(|e| give_back(stream.device, e));
            // No events: the time the host learns the operation is done is
            // the best known, so a host function after it writes it.
            untimed_after(stream, slots);
        }
    }
    result
}

/// A CUDA event of the stream's device, from the pool, recorded on it.
fn record(stream: &Stream) -> CuResult<CUevent> {
    stream.enter()?;
    let event = take_event(stream)?;
    // SAFETY: an event and a stream of the current context.
    let code = unsafe { (crate::api().event_record)(event, stream.handle) };
    if let Err(f) = stream.check("cuEventRecord", code) {
        give_back(stream.device, event);
        return Err(f);
    }
    Ok(event)
}

/// A CUDA event that the driver may use from any thread.
struct Ev(CUevent);
// SAFETY: CUDA events may be used from any thread.
unsafe impl Send for Ev {}

/// Each device's idle timing events.
fn pool() -> &'static Mutex<Vec<Vec<Ev>>> {
    static POOL: OnceLock<Mutex<Vec<Vec<Ev>>>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new((0..crate::cuda().devices.len()).map(|_| Vec::new()).collect()))
}

fn take_event(stream: &Stream) -> CuResult<CUevent> {
    if let Some(e) = pool().lock().unwrap_or_else(|p| p.into_inner())[stream.device].pop() {
        return Ok(e.0);
    }
    let mut event: CUevent = std::ptr::null_mut();
    // SAFETY: a valid output; the stream's context is current. Flags 0:
    // timing on.
    stream.check("cuEventCreate", unsafe { (crate::api().event_create)(&mut event, 0) })?;
    Ok(event)
}

fn give_back(device: usize, event: CUevent) {
    pool().lock().unwrap_or_else(|p| p.into_inner())[device].push(Ev(event));
}

/// Where events cannot time an operation: a host function after it writes
/// the time it is seen done, or, failing that, now.
fn untimed_after(stream: &Stream, slots: usize) {
    unsafe extern "C" fn stamp(slots: *mut std::ffi::c_void) {
        let now = monotonic_ns();
        write(slots as usize, now, now);
    }
    if stream.launch_host_func(Some(stamp), slots as *mut std::ffi::c_void).is_err() {
        let now = monotonic_ns();
        write(slots, now, now);
    }
}

/// Writes `start` then `end` to the two slots at `slots`.
fn write(slots: usize, start: u64, end: u64) {
    let slots = slots as *const AtomicU64;
    // SAFETY: the front keeps both slots alive (in memory that never moves
    // or goes away) until the second is written.
    unsafe {
        (*slots).store(start.max(1), Relaxed);
        (*slots.add(1)).store(end.max(start).max(1), Release);
    }
}

/// An operation bracketed by two recorded events.
struct Job {
    device: usize,
    start: Ev,
    end: Ev,
    slots: usize,
}

impl Job {
    /// Whether the operation is done (and both events can be read).
    fn done(&self) -> bool {
        // SAFETY: a live event; the query needs no particular context.
        unsafe { (crate::api().event_query)(self.end.0) == 0 }
    }

    /// Writes the times (read from the events, else now) and recycles the
    /// events. The operation is done, or failed.
    fn finish(self) {
        let (start, end) = read(&self).unwrap_or_else(|| {
            let now = monotonic_ns();
            (now, now)
        });
        write(self.slots, start, end);
        give_back(self.device, self.start.0);
        give_back(self.device, self.end.0);
    }
}

/// The jobs not yet written, oldest first, and the device of the one the
/// watcher is waiting for.
struct Queue {
    jobs: VecDeque<Job>,
    watching: Option<(usize, Ev)>,
}

// The queue and the watcher's wake-up.
fn queue() -> &'static (Mutex<Queue>, Condvar) {
    static QUEUE: OnceLock<(Mutex<Queue>, Condvar)> = OnceLock::new();
    QUEUE.get_or_init(|| (Mutex::new(Queue { jobs: VecDeque::new(), watching: None }), Condvar::new()))
}

fn lock() -> MutexGuard<'static, Queue> {
    queue().0.lock().unwrap_or_else(|p| p.into_inner())
}

/// Hands `job` to the watcher thread, started at the first; where no thread
/// can be started, the job is finished when the operation is.
fn submit(job: Job) {
    static WATCHER: OnceLock<bool> = OnceLock::new();
    let running =
        *WATCHER.get_or_init(|| std::thread::Builder::new().name("xdal-cuda-timing".into()).spawn(watch).is_ok());
    if !running {
        let dev = crate::cuda().device(job.device);
        if dev.enter().is_ok() {
            // SAFETY: a live event of the device's context.
            let _ = unsafe { (crate::api().event_synchronize)(job.end.0) };
        }
        job.finish();
        return;
    }
    lock().jobs.push_back(job);
    queue().1.notify_all();
}

/// The watcher: waits for each job's end in turn and writes its times.
fn watch() {
    loop {
        let job = {
            let mut q = lock();
            q.watching = None;
            queue().1.notify_all();
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    q.watching = Some((job.device, Ev(job.end.0)));
                    break job;
                }
                q = queue().1.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let dev = crate::cuda().device(job.device);
        if dev.enter().is_ok() {
            // SAFETY: an event recorded on the device, waited for from its
            // context. A failure (the operation failed) is seen by `read`.
            let _ = unsafe { (crate::api().event_synchronize)(job.end.0) };
        }
        job.finish();
    }
}

/// Writes the times of every operation of `device` that is done, before
/// returning: called where the host learns work is done (a stream's, an
/// event's or the device's synchronization or query), so that a tracer
/// flushed after it has their activities, as with the front's own stamps.
pub(crate) fn settle(device: usize) {
    if !ASKED.load(Relaxed) {
        return;
    }
    let mut q = lock();
    let mut done = Vec::new();
    let mut i = 0;
    while i < q.jobs.len() {
        if q.jobs[i].device == device && q.jobs[i].done() {
            done.extend(q.jobs.remove(i));
        } else {
            i += 1;
        }
    }
    // The watcher's job, if done, is written at once: wait for it.
    // SAFETY: a live event; the query needs no particular context.
    while q.watching.as_ref().is_some_and(|(d, e)| *d == device && unsafe { (crate::api().event_query)(e.0) } == 0) {
        q = queue().1.wait(q).unwrap_or_else(|p| p.into_inner());
    }
    drop(q);
    done.into_iter().for_each(Job::finish);
}

/// A device's base: an event whose completion is known on the host clock.
struct Base {
    event: CUevent,
    host_ns: u64,
}

/// The base of one device.
#[derive(Default)]
struct Clock {
    /// A private stream for base events (never waiting on other work).
    stream: Option<usize>,
    base: Option<Base>,
}

// SAFETY: the stream and event are CUDA objects, usable from any thread.
unsafe impl Send for Clock {}

fn clocks() -> &'static Mutex<Vec<Clock>> {
    static CLOCKS: OnceLock<Mutex<Vec<Clock>>> = OnceLock::new();
    CLOCKS.get_or_init(|| Mutex::new((0..crate::cuda().devices.len()).map(|_| Clock::default()).collect()))
}

/// The job's start and end on the monotonic clock; None where the driver
/// cannot tell (the operation failed, the device is lost).
fn read(job: &Job) -> Option<(u64, u64)> {
    let dev = crate::cuda().device(job.device);
    dev.enter().ok()?;
    if !job.done() {
        return None;
    }
    let mut clocks = clocks().lock().unwrap_or_else(|p| p.into_inner());
    let clock = &mut clocks[job.device];
    let now = monotonic_ns();
    if clock.base.as_ref().is_none_or(|b| now.saturating_sub(b.host_ns) > REBASE_NS) {
        rebase(clock, job.device)?;
    }
    let base = clock.base.as_ref()?;
    let start = to_ns(base.host_ns, offset_ms(base.event, job.start.0)?);
    let end = to_ns(start, offset_ms(job.start.0, job.end.0)?);
    Some((start, end))
}

/// The time from event `a` to event `b` in milliseconds (negative where `b`
/// came first, as a base taken after an operation's start does).
fn offset_ms(a: CUevent, b: CUevent) -> Option<f32> {
    let api = crate::api();
    let mut ms = 0f32;
    // SAFETY: completed events of one context; a valid output.
    if unsafe { (api.event_elapsed_time)(&mut ms, a, b) } == 0 {
        return Some(ms);
    }
    // SAFETY: as above, the other way round.
    (unsafe { (api.event_elapsed_time)(&mut ms, b, a) } == 0).then_some(-ms)
}

/// `base_ns` plus `ms` milliseconds, on the monotonic clock (never 0).
pub(crate) fn to_ns(base_ns: u64, ms: f32) -> u64 {
    let ns = base_ns as f64 + f64::from(ms) * 1e6;
    if ns < 1.0 {
        1
    } else {
        ns.round() as u64
    }
}

/// Tries at a base whose host times are at most `TIGHT_NS` apart (a wake-up
/// the scheduler delays widens them); the last is kept in any case.
const TRIES: usize = 3;
const TIGHT_NS: u64 = 100_000;

/// Takes the device's base again: an event recorded on the clock's private
/// stream and waited for, its time the middle of the host times around it.
fn rebase(clock: &mut Clock, device: usize) -> Option<()> {
    let dev = crate::cuda().device(device);
    let api = crate::api();
    let stream = match clock.stream {
        Some(s) => s as CUstream,
        None => {
            let mut s: CUstream = std::ptr::null_mut();
            // SAFETY: a valid output; the device's context is current. The
            // most urgent priority: the base waits for nothing else.
            let code = unsafe { (api.stream_create_with_priority)(&mut s, CU_STREAM_NON_BLOCKING, dev.priorities.1) };
            dev.check("cuStreamCreateWithPriority", code).ok()?;
            clock.stream = Some(s as usize);
            s
        }
    };
    let event = match clock.base.take() {
        Some(b) => b.event,
        None => {
            let mut e: CUevent = std::ptr::null_mut();
            // SAFETY: a valid output; the device's context is current.
            dev.check("cuEventCreate", unsafe { (api.event_create)(&mut e, 0) }).ok()?;
            e
        }
    };
    let (mut before, mut after) = (0, u64::MAX);
    for _ in 0..TRIES {
        before = monotonic_ns();
        // SAFETY: an event and a stream of the current context.
        dev.check("cuEventRecord", unsafe { (api.event_record)(event, stream) }).ok()?;
        // SAFETY: as above.
        dev.check("cuEventSynchronize", unsafe { (api.event_synchronize)(event) }).ok()?;
        after = monotonic_ns();
        if after - before <= TIGHT_NS {
            break;
        }
    }
    clock.base = Some(Base { event, host_ns: before + (after - before) / 2 });
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_become_nanoseconds_from_the_base() {
        assert_eq!(to_ns(5_000_000_000, 1.5), 5_001_500_000);
        assert_eq!(to_ns(5_000_000_000, -0.25), 4_999_750_000);
        assert_eq!(to_ns(5_000_000_000, 0.0), 5_000_000_000);
        assert_eq!(to_ns(10, -1.0), 1, "never before the clock's start, never 0");
    }

    #[test]
    fn a_base_no_older_than_the_rebase_age_keeps_errors_under_a_microsecond() {
        // The worst an f32 of milliseconds rounds at the largest distance a
        // base may have from an operation it times (the rebase age, and as
        // much again for an operation that waited as long in its queue).
        let distance_ms = 2.0 * REBASE_NS as f64 / 1e6;
        let step_ms = f64::from(f32::EPSILON) * distance_ms;
        assert!(step_ms * 1e6 < 1000.0, "{} ns", step_ms * 1e6);
        // As the conversion sees it: a time 1.999999 s after the base.
        let ms = 1999.999_f32;
        let ns = to_ns(0, ms);
        assert!((ns as i64 - 1_999_999_000).abs() < 1000, "{ns}");
    }

    #[test]
    fn a_request_is_taken_once_and_null_cancels_it() {
        time_next(0x1000);
        assert_eq!(NEXT.replace(0), 0x1000);
        assert_eq!(NEXT.get(), 0, "taken");
        time_next(0x2000);
        time_next(0);
        assert_eq!(NEXT.get(), 0, "cancelled");
    }

    #[test]
    fn the_end_is_never_before_the_start() {
        let slots = [AtomicU64::new(0), AtomicU64::new(0)];
        write(slots.as_ptr() as usize, 200, 100);
        assert_eq!((slots[0].load(Acquire), slots[1].load(Acquire)), (200, 200));
    }
}
