//! Streams: in-order queues of work, drained by the executor or by a host
//! thread that waits for them.
//!
//! Every operation gets a sequence number when it is enqueued (1, 2, ...);
//! `completed` counts the operations finished. A point in a stream is thus a
//! number, and "has the stream passed point n" is one atomic load. Events,
//! waits and the stream-ordered pool are all built on that.
use crate::error::{panic_text, Failure};
use crate::event::Marker;
use crate::lock::IgnorePoison;
use crate::stream_state::AtomicStreamState;
use crate::tuning::{ENQUEUE_LOCK_SPIN_PAUSES, LONG_COPY_MIN_BYTES, STREAM_BUDGET_OPS, SYNC_SPIN_PAUSES};
use crossbeam_queue::SegQueue;
use crossbeam_utils::CachePadded;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex};
use xdal_backend_support::callback::run_callback;
use xdal_backend_support::clock::monotonic_ns;

/// A lock for the few instructions of an enqueue: contended only by
/// producers of the same stream, so spinning beats sleeping.
#[derive(Default)]
struct SpinLock(AtomicBool);

struct SpinGuard<'a>(&'a AtomicBool);

impl SpinLock {
    fn lock(&self) -> SpinGuard<'_> {
        let mut spins = 0u32;
        while self.0.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
            spins += 1;
            if spins < ENQUEUE_LOCK_SPIN_PAUSES {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        SpinGuard(&self.0)
    }
}

impl Drop for SpinGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Release);
    }
}

/// A pointer carried into an operation that runs on another thread.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub *mut c_void);
// SAFETY: the pointers are device aliases or user buffers whose validity
// over the operation's life is the enqueuing caller's contract, as on CUDA.
unsafe impl Send for SendPtr {}

/// One unit of stream work.
pub(crate) enum Op {
    Copy {
        dst: SendPtr,
        src: SendPtr,
        len: usize,
    },
    Set {
        dst: SendPtr,
        value: u8,
        len: usize,
    },
    Host {
        func: unsafe extern "C" fn(*mut c_void),
        data: SendPtr,
    },
    /// Records the time at which the stream reaches an event's point.
    Mark(Arc<Marker>),
    /// Another operation, with two 8-byte slots for the `CLOCK_MONOTONIC`
    /// times at which it starts and ends (`time_next_enqueue`, tracing).
    Timed(Box<Op>, SendPtr),
    /// An untimed event's point: nothing to do but take its place in order.
    Point,
    /// Holds the stream until another stream passes a point.
    Wait(Arc<Marker>),
    /// A kernel launch; its failure becomes the stream's sticky error.
    Kernel(Arc<crate::launch::Launch>),
    /// Any other work; its failure becomes the stream's sticky error.
    Task(Box<dyn FnOnce() -> Result<(), Failure> + Send>),
}

enum Step {
    Done(Result<(), Failure>),
    Blocked,
}

/// How `Stream::drain` left the stream it ran.
pub(crate) enum Drained {
    /// Nothing pending (some may come): the caller still owns it, Running.
    Empty,
    /// It ran its budget while other streams wait for a worker: the caller
    /// still owns it, Running, with work pending.
    Yielded,
    /// It waits for another stream (Blocked): the waker queues it again.
    Blocked,
    /// The waiting host thread has its point: the rest is back in the run
    /// queue (Queued).
    HandedBack,
}

pub(crate) struct Stream {
    pub device: usize,
    level: usize,
    id: u64,
    /// Operations not yet started, in order. Producers push under
    /// `producer`; the runner pops without any lock.
    pending: SegQueue<Op>,
    /// Serialises producers, so sequence numbers follow queue order.
    producer: SpinLock,
    /// A wait that blocked, to run first when the stream resumes. Only the
    /// runner touches it.
    stalled: Mutex<Option<Op>>,
    /// Whether `stalled` holds an op: spares the lock on every run.
    has_stalled: AtomicBool,
    /// Written by producers on every enqueue.
    enqueued: CachePadded<AtomicU64>,
    /// Written by the runner after every operation: on its own cache line,
    /// so producers and the runner do not bounce one line between cores.
    completed: CachePadded<AtomicU64>,
    /// Who owns the stream; see `stream_state` for the transitions.
    state: AtomicStreamState,
    waiters: Mutex<Vec<(u64, Arc<Stream>)>>,
    has_waiters: AtomicBool,
    sleepers: AtomicUsize,
    /// The lowest point a sleeping host thread waits for (u64::MAX: none):
    /// completions before it wake nobody, so a thread waiting for the end
    /// of a long queue sleeps through it instead of waking per operation.
    sleep_until: AtomicU64,
    sleep_lock: Mutex<()>,
    sleep_cv: Condvar,
    /// Sequence number of the first failed operation; u64::MAX when none.
    error_seq: AtomicU64,
    error: Mutex<Option<Failure>>,
    /// Set by `xdal_stream_destroy`: the stream's sticky error no longer
    /// counts for its device, though its pending work still runs.
    destroyed: AtomicBool,
}

impl Stream {
    pub fn new(device: usize, level: usize, id: u64) -> Stream {
        Stream {
            device,
            level,
            id,
            pending: SegQueue::new(),
            producer: SpinLock::default(),
            stalled: Mutex::new(None),
            has_stalled: AtomicBool::new(false),
            enqueued: CachePadded::new(AtomicU64::new(0)),
            completed: CachePadded::new(AtomicU64::new(0)),
            state: AtomicStreamState::new(),
            waiters: Mutex::new(Vec::new()),
            has_waiters: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            sleep_until: AtomicU64::new(u64::MAX),
            sleep_lock: Mutex::new(()),
            sleep_cv: Condvar::new(),
            error_seq: AtomicU64::new(u64::MAX),
            error: Mutex::new(None),
            destroyed: AtomicBool::new(false),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn level(&self) -> usize {
        self.level
    }

    /// Enqueues an operation; returns its sequence number.
    pub fn enqueue(self: &Arc<Self>, op: Op) -> u64 {
        self.enqueue_with(|_| op)
    }

    /// Enqueues the operation `make` builds from its own sequence number.
    pub fn enqueue_with(self: &Arc<Self>, make: impl FnOnce(u64) -> Op) -> u64 {
        let seq = {
            let _producer = self.producer.lock();
            let seq = self.enqueued.load(Relaxed) + 1;
            self.pending.push(make(seq));
            self.enqueued.store(seq, SeqCst);
            seq
        };
        if self.state.try_queue_on_enqueue() {
            crate::fake().device(self.device).busy_streams.fetch_add(1, SeqCst);
            crate::fake().executor.schedule(self.clone());
        }
        seq
    }

    /// The current point if the stream has nothing pending: then a new
    /// point needs no operation, it is reached already.
    pub fn idle_point(&self) -> Option<u64> {
        let _producer = self.producer.lock();
        let enqueued = self.enqueued.load(SeqCst);
        self.passed(enqueued).then_some(enqueued)
    }

    /// The user destroyed the stream: its error stops counting for the
    /// device (the error slot's lock orders this against a failure).
    pub fn mark_destroyed(&self) {
        let error = self.error.lock().ignore_poison();
        if !self.destroyed.swap(true, SeqCst) && error.is_some() {
            crate::fake().device(self.device).failed_streams.fetch_sub(1, SeqCst);
        }
    }

    pub fn is_destroyed(&self) -> bool {
        self.destroyed.load(SeqCst)
    }

    /// Sequence number of the last operation enqueued.
    pub fn last_enqueued(&self) -> u64 {
        self.enqueued.load(SeqCst)
    }

    /// Whether the stream has finished operation `seq`.
    #[inline]
    pub fn passed(&self, seq: u64) -> bool {
        self.completed.load(Acquire) >= seq
    }

    /// The sticky error, if an operation at or before `seq` failed.
    pub fn error_at(&self, seq: u64) -> Option<Failure> {
        if self.error_seq.load(Acquire) <= seq {
            self.error.lock().ignore_poison().clone()
        } else {
            None
        }
    }

    /// SUCCESS, NOT_READY, or the sticky error.
    pub fn query(&self) -> Result<(), Failure> {
        let last = self.last_enqueued();
        if let Some(failure) = self.error_at(u64::MAX - 1) {
            return Err(failure);
        }
        if self.passed(last) {
            Ok(())
        } else {
            Err(crate::error::failure!(XDAL_ERROR_NOT_READY, "stream has pending work"))
        }
    }

    /// Waits until all work enqueued so far is done; returns the sticky error.
    pub fn synchronize(self: &Arc<Self>) -> Result<(), Failure> {
        self.wait_for(self.last_enqueued());
        match self.error_at(u64::MAX - 1) {
            Some(failure) => Err(failure),
            None => Ok(()),
        }
    }

    /// Waits until the stream has finished operation `seq`. While the stream
    /// sits in a run queue or a worker's hot set, the waiting thread runs it
    /// itself: that saves a worker wake-up on every synchronize of short work.
    pub fn wait_for(self: &Arc<Self>, seq: u64) {
        let mut rounds = 0;
        while !self.passed(seq) {
            if self.claim() {
                match self.drain(Some(seq), 0) {
                    Drained::Empty | Drained::Yielded => self.release(),
                    Drained::Blocked | Drained::HandedBack => {}
                }
                continue;
            }
            if rounds < SYNC_SPIN_PAUSES {
                rounds += 1;
                std::hint::spin_loop();
                continue;
            }
            // Sleep until the point is passed, or until the stream is queued
            // again (a wait it was blocked on was satisfied): then help run it.
            let mut guard = self.sleep_lock.lock().ignore_poison();
            self.sleepers.fetch_add(1, SeqCst);
            loop {
                // Registered before the check (pairs with the completion's
                // store then load): either the check sees the point passed,
                // or the completion sees this thread waiting for it.
                self.sleep_until.fetch_min(seq, SeqCst);
                if self.passed(seq) || self.state.is_queued() {
                    break;
                }
                guard = self.sleep_cv.wait(guard).ignore_poison();
            }
            self.sleepers.fetch_sub(1, SeqCst);
            drop(guard);
        }
    }

    /// Takes the stream to run it, from a run queue or a hot set; false if
    /// it is not there (idle, blocked, or someone else runs it).
    #[inline]
    pub fn claim(&self) -> bool {
        self.state.try_claim()
    }

    /// Whether the stream sits in a hot set, unclaimed.
    #[inline]
    pub fn is_hot(&self) -> bool {
        self.state.is_hot()
    }

    /// Whether operations wait to be run.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The owner (Running) puts the stream in its hot set.
    #[inline]
    pub fn park_hot(&self) {
        self.state.park_hot();
    }

    /// Takes a hot stream back to the usual protocol, unless someone has
    /// claimed it meanwhile.
    pub fn release_hot(self: &Arc<Self>) {
        if self.state.try_unpark_hot() {
            self.release();
        }
    }

    /// The owner (Running) lets the stream go idle; work enqueued meanwhile
    /// sends it to the run queue instead.
    pub fn release(self: &Arc<Self>) {
        self.state.release_idle();
        // Pairs with the enqueue's store and state check: either the
        // producer sees Idle and schedules, or we see its operation.
        let more = self.enqueued.load(SeqCst) > self.completed.load(SeqCst);
        if more && self.state.try_requeue_released() {
            // Still busy: the count moves on to the queued stretch.
            crate::fake().executor.schedule(self.clone());
            return;
        }
        // Counted busy from Idle -> Queued until here: one count per
        // stretch of activity, not one per operation.
        crate::fake().device(self.device).busy_streams.fetch_sub(1, SeqCst);
    }

    /// Runs the stream the caller owns (Running). A host thread waiting for
    /// operation `until` stops once it is done, handing whatever other
    /// threads enqueued since back to the workers, so a synchronize cannot
    /// be held forever by a producer that keeps the stream busy. A worker
    /// (`until` None) yields after `STREAM_BUDGET_OPS` operations when other
    /// streams wait; once the stream is empty it keeps looking for
    /// `linger_pauses` rounds if there is nothing else to do, so that a
    /// producer in the middle of a burst finds it still running and nobody
    /// pays for a wake-up.
    pub fn drain(self: &Arc<Self>, until: Option<u64>, linger_pauses: u32) -> Drained {
        let mut next =
            if self.has_stalled.swap(false, SeqCst) { self.stalled.lock().ignore_poison().take() } else { None };
        let mut budget = STREAM_BUDGET_OPS;
        let executor = &crate::fake().executor;
        let others_waiting = || executor.has_work() || !crate::hot::is_empty();
        loop {
            while let Some(op) = next.take().or_else(|| self.pending.pop()) {
                match self.execute(op) {
                    Step::Done(result) => self.complete_one(result),
                    // State is Blocked, the op is in `stalled` and we are
                    // registered as a waiter: the waker reschedules us.
                    Step::Blocked => return Drained::Blocked,
                }
                if let Some(seq) = until {
                    if self.passed(seq) && !self.pending.is_empty() {
                        self.state.hand_back();
                        executor.schedule(self.clone());
                        return Drained::HandedBack;
                    }
                    continue;
                }
                budget -= 1;
                if budget == 0 {
                    if others_waiting() {
                        return Drained::Yielded;
                    }
                    budget = STREAM_BUDGET_OPS;
                }
            }
            let mut rounds = 0;
            while self.pending.is_empty() && rounds < linger_pauses && !others_waiting() {
                std::hint::spin_loop();
                rounds += 1;
            }
            if self.pending.is_empty() {
                return Drained::Empty;
            }
        }
    }

    fn execute(self: &Arc<Self>, op: Op) -> Step {
        match op {
            Op::Copy { dst, src, len } => {
                let _long = (len >= LONG_COPY_MIN_BYTES).then(|| crate::fake().executor.long_op());
                // SAFETY: the front checked both ranges at enqueue; device
                // addresses were translated to the backend alias.
                unsafe { std::ptr::copy(src.0 as *const u8, dst.0 as *mut u8, len) };
                Step::Done(Ok(()))
            }
            Op::Set { dst, value, len } => {
                let _long = (len >= LONG_COPY_MIN_BYTES).then(|| crate::fake().executor.long_op());
                // SAFETY: as for Copy.
                unsafe { std::ptr::write_bytes(dst.0 as *mut u8, value, len) };
                Step::Done(Ok(()))
            }
            Op::Host { func, data } => {
                let _long = crate::fake().executor.long_op();
                // SAFETY: the caller gave a valid function and its argument;
                // running it once here, in stream order, marked as a
                // callback (a waiting xdal call from it is refused), is the
                // contract.
                run_callback(|| unsafe { func(data.0) });
                Step::Done(Ok(()))
            }
            Op::Mark(marker) => {
                marker.stamp();
                Step::Done(Ok(()))
            }
            Op::Point => Step::Done(Ok(())),
            Op::Timed(op, slots) => {
                let slots = slots.0 as *const AtomicU64;
                // SAFETY: the front keeps both slots alive until the second
                // is written, and reads them atomically.
                unsafe { (*slots).store(monotonic_ns(), Release) };
                let step = self.execute(*op);
                // SAFETY: as above.
                unsafe { (*slots.add(1)).store(monotonic_ns(), Release) };
                step
            }
            Op::Wait(marker) => {
                if self.block_on(marker) {
                    Step::Blocked
                } else {
                    Step::Done(Ok(()))
                }
            }
            Op::Kernel(launch) => {
                let _long = crate::fake().executor.long_op();
                let result = Self::catching(|| launch.run());
                crate::launch::Launch::recycle(launch);
                Step::Done(result)
            }
            Op::Task(task) => {
                let _long = crate::fake().executor.long_op();
                Step::Done(Self::catching(task))
            }
        }
    }

    /// Runs Rust work, turning a panic into XDAL_ERROR_INTERNAL.
    fn catching(work: impl FnOnce() -> Result<(), Failure>) -> Result<(), Failure> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|p| {
            Err(crate::error::failure!(XDAL_ERROR_INTERNAL, "stream work panicked: {}", panic_text(p.as_ref())))
        })
    }

    /// Registers this stream as waiting for `marker`, unless it is already
    /// passed. Returns whether the stream must stop running.
    fn block_on(self: &Arc<Self>, marker: Arc<Marker>) -> bool {
        let (target, seq) = (marker.stream.clone(), marker.seq);
        if Arc::ptr_eq(&target, self) || target.passed(seq) {
            return false;
        }
        // Parked before we register: the waker may resume us (on another
        // thread) the moment we are registered.
        *self.stalled.lock().ignore_poison() = Some(Op::Wait(marker));
        self.has_stalled.store(true, SeqCst);
        let mut waiters = target.waiters.lock().ignore_poison();
        target.has_waiters.store(true, SeqCst);
        if target.completed.load(SeqCst) >= seq {
            self.has_stalled.store(false, SeqCst);
            self.stalled.lock().ignore_poison().take();
            return false;
        }
        self.state.block();
        waiters.push((seq, self.clone()));
        true
    }

    fn complete_one(&self, result: Result<(), Failure>) {
        let seq = self.completed.load(Relaxed) + 1;
        if let Err(failure) = result {
            let mut error = self.error.lock().ignore_poison();
            if error.is_none() {
                *error = Some(failure);
                self.error_seq.store(seq, Release);
                if !self.destroyed.load(SeqCst) {
                    crate::fake().device(self.device).failed_streams.fetch_add(1, SeqCst);
                }
            }
        }
        self.completed.store(seq, SeqCst);
        if self.has_waiters.load(SeqCst) {
            self.wake_waiters(seq);
        }
        if seq >= self.sleep_until.load(SeqCst) {
            self.notify_sleepers();
        }
    }

    /// Wakes host threads waiting on this stream, if any.
    fn notify_sleepers(&self) {
        if self.sleepers.load(SeqCst) > 0 {
            let _guard = self.sleep_lock.lock().ignore_poison();
            // Every sleeper wakes, and those still waiting register again.
            self.sleep_until.store(u64::MAX, SeqCst);
            self.sleep_cv.notify_all();
        }
    }

    fn wake_waiters(&self, completed: u64) {
        let mut waiters = self.waiters.lock().ignore_poison();
        waiters.retain(|(seq, stream)| {
            if *seq > completed {
                return true;
            }
            stream.state.wake_blocked();
            crate::fake().executor.schedule(stream.clone());
            stream.notify_sleepers();
            false
        });
        if waiters.is_empty() {
            self.has_waiters.store(false, SeqCst);
        }
    }
}

thread_local! {
    /// The slots `time_next_enqueue` asked for, for this thread's next
    /// operation (0: none).
    static TIME_NEXT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Requests of `time_next` not yet taken, over all threads: while there
/// are none (no tracer), an enqueue does not touch the thread-local (which
/// costs a call in a shared library), only this word.
static TIME_REQUESTS: AtomicUsize = AtomicUsize::new(0);

/// Times this thread's next operation (`time_next_enqueue`); 0 cancels.
pub(crate) fn time_next(slots: usize) {
    let before = TIME_NEXT.replace(slots);
    match (before != 0, slots != 0) {
        (false, true) => TIME_REQUESTS.fetch_add(1, SeqCst),
        (true, false) => TIME_REQUESTS.fetch_sub(1, SeqCst),
        _ => 0,
    };
}

/// `op`, timed if this thread asked for its next operation to be.
#[inline]
pub(crate) fn timed(op: Op) -> Op {
    if TIME_REQUESTS.load(Relaxed) == 0 {
        return op;
    }
    match TIME_NEXT.replace(0) {
        0 => op,
        slots => {
            TIME_REQUESTS.fetch_sub(1, SeqCst);
            Op::Timed(Box::new(op), SendPtr(slots as *mut c_void))
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.mark_destroyed();
        crate::fake().device(self.device).forget_stream(self.id);
    }
}
