//! Every number the scheduler is tuned by, in one place.
//!
//! The fake runs streams on a few worker threads, and most of its speed
//! comes from not paying for a sleep and a wake-up between two operations:
//! threads look for work a little while before they sleep, and workers
//! keep drained streams at hand. These bound how long each of them looks.
//!
//! Units are in the names. `_PAUSES` counts rounds of a busy loop, each one
//! `std::hint::spin_loop` (a PAUSE on x86: from a few to tens of
//! nanoseconds, depending on the core) plus the check it waits on; such a
//! bound costs no clock read, and its length in time varies with the CPU
//! (the times quoted below assume a few nanoseconds a round).
//! `POLLS` counts passes over a worker's hot set that found nothing.
//! Durations are `Duration`s, sizes `_BYTES`, counts of stream operations
//! `_OPS`. docs/performance.md records what changing the polling cost.
use std::time::Duration;

/// Spins of a producer waiting for a stream's enqueue lock before it
/// yields its core instead: the lock is held for a few instructions, so a
/// holder that is running lets go well within these; one that was
/// descheduled needs the core, which yielding gives it.
pub(crate) const ENQUEUE_LOCK_SPIN_PAUSES: u32 = 64;

/// Spins of a host thread waiting for a stream point (a stream or event
/// synchronize) that it cannot run itself, before it sleeps on the
/// stream's condition variable: a wait for short work then ends without a
/// sleep and a wake-up, a long one costs one core only briefly.
pub(crate) const SYNC_SPIN_PAUSES: u32 = 4_000;

/// Spins of a worker that just emptied a stream and has nothing else to
/// do, looking for more work on that stream before it parks it in its hot
/// set: a few microseconds, the gap between two enqueues of a busy
/// producer, which then finds the stream still running.
pub(crate) const EMPTIED_STREAM_LINGER_PAUSES: u32 = 2_000;

/// Spins of the one idle worker allowed to spin, looking for any work
/// before it sleeps (tens of microseconds): long enough to catch the next
/// item of a busy producer without a wake-up.
pub(crate) const WORKER_IDLE_SPIN_PAUSES: u32 = 20_000;

/// How long a worker keeps polling its hot set after the last work it
/// found there, before releasing it (see `hot`): long enough to bridge the
/// gaps of a producer spreading work over many streams, short enough that
/// an idle worker soon stops polling.
pub(crate) const HOT_SET_LINGER: Duration = Duration::from_micros(50);

/// Empty hot-set polls between two looks at the clock (to check
/// `HOT_SET_LINGER`): reading the clock costs more than a pass over a small
/// hot set, and this many passes still take far less than the linger.
pub(crate) const HOT_SET_POLLS_PER_CLOCK_READ: u32 = 64;

/// Operations a worker runs from one stream before it lets other queued
/// streams have a turn: large enough that the switch costs little per
/// operation, small enough that no stream waits long behind a busy one.
pub(crate) const STREAM_BUDGET_OPS: u32 = 256;

/// Copies and sets from this size on count as long operations (like host
/// functions and kernels): they may take long enough that other streams
/// should not wait for the worker running them, so that worker releases
/// its hot set and new work wakes another worker.
pub(crate) const LONG_COPY_MIN_BYTES: usize = 1 << 20;
