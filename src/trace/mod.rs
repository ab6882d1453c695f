//! Tracing (ABI 1.2), generic over every backend: an API record per xdal
//! call and an activity record per piece of work the calls enqueued, tied
//! by correlation ids, delivered to every live tracer, and written as a
//! Chrome trace-event file when `XDAL_TRACE` names one. Off (no tracer and
//! no file), each call pays the one load of observe.rs.
pub(crate) mod activity;
mod chrome;

use crate::handles::HandleTable;
use crate::lock::IgnorePoison;
use std::cell::{Cell, RefCell};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use xdal_abi::*;

/// A live tracer: what its creator asked for.
pub(crate) struct TracerObj {
    api: xdal_api_callback_t,
    activity: xdal_activity_callback_t,
    user_data: usize,
    mask: u64,
    /// Cleared by `xdal_tracer_destroy`: no callback starts after that.
    live: AtomicBool,
    /// Its callbacks under way, on every thread: `retire` waits for them,
    /// since its creator may free the user data once destroy returns.
    running: AtomicUsize,
}

thread_local! {
    /// The tracers whose callbacks the thread is inside (a callback may
    /// destroy its own tracer: `retire` does not wait for those).
    static INSIDE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

impl TracerObj {
    pub fn new(desc: &xdal_tracer_desc_t) -> TracerObj {
        TracerObj {
            api: desc.api,
            activity: desc.activity,
            user_data: desc.user_data as usize,
            mask: if desc.activity_mask == 0 { u64::MAX } else { desc.activity_mask },
            live: AtomicBool::new(true),
            running: AtomicUsize::new(0),
        }
    }

    /// Runs one of its callbacks, unless the tracer was destroyed.
    fn call(&self, callback: impl FnOnce()) {
        // SeqCst on both sides (here and in `retire`): either this count is
        // seen by `retire`, which then waits, or the cleared flag is seen
        // here, and nothing is called.
        self.running.fetch_add(1, SeqCst);
        if self.live.load(SeqCst) {
            let me = self as *const TracerObj as usize;
            let _ = INSIDE.try_with(|inside| inside.borrow_mut().push(me));
            callback();
            let _ = INSIDE.try_with(|inside| inside.borrow_mut().pop());
        }
        self.running.fetch_sub(1, Release);
    }

    /// Stops its callbacks: returns once none is under way on another
    /// thread (those of the calling thread are the ones it is inside).
    pub fn retire(&self) {
        self.live.store(false, SeqCst);
        let me = self as *const TracerObj as usize;
        let own = INSIDE.try_with(|inside| inside.borrow().iter().filter(|&&t| t == me).count()).unwrap_or(0);
        while self.running.load(SeqCst) > own {
            std::thread::yield_now();
        }
    }

    fn wants(&self, kind: xdal_activity_kind) -> bool {
        self.mask & (1u64 << kind as u32) != 0
    }
}

pub(crate) static TRACERS: HandleTable<TracerObj> = HandleTable::tracked(0xA17C, "tracer");

/// The live tracers, as one shared list, and its generation: each thread
/// keeps the list it last saw, and takes the lock only when the
/// generation moved.
static LIVE: Mutex<Option<Arc<Vec<Arc<TracerObj>>>>> = Mutex::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static SEEN: RefCell<(u64, Arc<Vec<Arc<TracerObj>>>)> = RefCell::new((0, Arc::default()));
}

/// Runs `f` with the live tracers.
fn with_live<R>(f: impl FnOnce(&[Arc<TracerObj>]) -> R) -> R {
    let generation = GENERATION.load(Acquire);
    let shared = || LIVE.lock().ignore_poison().clone().unwrap_or_default();
    let list = SEEN
        .try_with(|seen| {
            let mut seen = seen.borrow_mut();
            if seen.0 != generation {
                *seen = (generation, shared());
            }
            Arc::clone(&seen.1)
        })
        // The thread's copy is gone (an atexit handler, such as the trace
        // file's, runs after the exiting thread's thread-locals are
        // destroyed): the shared list, under its lock.
        .unwrap_or_else(|_| shared());
    f(&list)
}

/// Publishes the tracer list after a create or destroy, and turns tracing
/// on or off.
pub(crate) fn tracers_changed() {
    let tracers: Vec<Arc<TracerObj>> = TRACERS.values();
    let on = !tracers.is_empty() || chrome::is_on();
    *LIVE.lock().ignore_poison() = Some(Arc::new(tracers));
    GENERATION.fetch_add(1, Release);
    crate::observe::set(crate::observe::TRACE, on);
}

/// Whether tracing is on: checked by every call that enqueues work.
#[inline(always)]
pub(crate) fn on() -> bool {
    crate::observe::any() && crate::observe::flags() & crate::observe::TRACE != 0
}

/// Reads `XDAL_TRACE` (once, for observe.rs).
pub(crate) fn from_environment() -> bool {
    match xdal_backend_support::env::var("XDAL_TRACE") {
        Some(path) => {
            chrome::start(path);
            true
        }
        None => false,
    }
}

pub(crate) use xdal_backend_support::clock::monotonic_ns as now_ns;

static NEXT_CORRELATION: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The thread's pushed external ids.
    static EXTERNAL: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// The thread's OS id, once asked.
    static THREAD_ID: Cell<u64> = const { Cell::new(0) };
}

/// The innermost traced call this thread is in, if any.
fn innermost() -> Option<Call> {
    CALLS.try_with(|calls| calls.borrow().iter().rev().find_map(|call| *call)).ok().flatten()
}

/// When the traced call this thread is in started (0 outside traced calls).
pub(crate) fn call_start() -> u64 {
    innermost().map_or(0, |call| call.start_ns)
}

/// The correlation id of the traced call this thread is in (0: none).
pub(crate) fn correlation() -> u64 {
    innermost().map_or(0, |call| call.id)
}

/// The calling thread's OS id.
pub(crate) fn thread_id() -> u64 {
    let id = THREAD_ID.get();
    if id != 0 {
        return id;
    }
    // SAFETY: gettid has no preconditions.
    let id = u64::try_from(unsafe { libc::gettid() }).unwrap_or(0);
    THREAD_ID.set(id);
    id
}

/// Pushes an external correlation id for the calling thread.
pub(crate) fn push_external(id: u64) {
    // Past the thread's end (its thread-locals destroyed) ids are not kept.
    let _ = EXTERNAL.try_with(|stack| stack.borrow_mut().push(id));
}

/// Pops the calling thread's top external id.
pub(crate) fn pop_external() -> Option<u64> {
    EXTERNAL.try_with(|stack| stack.borrow_mut().pop()).ok().flatten()
}

/// A traced call under way: its correlation id and start.
#[derive(Clone, Copy)]
struct Call {
    id: u64,
    start_ns: u64,
}

thread_local! {
    /// The thread's watched calls under way, innermost last (a tracer's
    /// callback may call xdal): the traced ones with their state.
    static CALLS: RefCell<Vec<Option<Call>>> = const { RefCell::new(Vec::new()) };
}

/// Starts a watched call; `traced`: gives it a correlation id and its
/// start time.
pub(crate) fn begin(traced: bool) {
    let call = traced.then(|| Call { id: NEXT_CORRELATION.fetch_add(1, Relaxed), start_ns: now_ns() });
    // Past the thread's end (its thread-locals destroyed, as in an atexit
    // handler) calls go untraced: `end` then finds nothing either.
    let _ = CALLS.try_with(|calls| calls.borrow_mut().push(call));
}

/// Ends the thread's innermost watched call; a traced one's record goes
/// to every tracer.
pub(crate) fn end(function: &'static CStr, status: xdal_status_t) {
    let Ok(Some(Some(Call { id, start_ns }))) = CALLS.try_with(|calls| calls.borrow_mut().pop()) else {
        return;
    };
    let end_ns = now_ns();
    let record = xdal_api_record_t {
        struct_size: std::mem::size_of::<xdal_api_record_t>(),
        function: function.as_ptr(),
        correlation_id: id,
        external_id: EXTERNAL.try_with(|stack| stack.borrow().last().copied().unwrap_or(0)).unwrap_or(0),
        start_ns,
        end_ns,
        thread_id: thread_id(),
        status,
    };
    with_live(|tracers| {
        for tracer in tracers {
            if let Some(api) = tracer.api {
                // SAFETY: the tracer creator's callback and user data, valid
                // until its destroy returns, which `call` waits for; the
                // record is valid during the call.
                tracer.call(|| unsafe { api(tracer.user_data as *mut c_void, &record) });
            }
        }
    });
    chrome::api(function, &record);
}

/// Hands completed activities to every tracer that wants them, and to the
/// trace file (with where each was enqueued from, for its flow arrows).
fn deliver_records(records: &[xdal_activity_t], origins: &[activity::Origin]) {
    if records.is_empty() {
        return;
    }
    let tracers = with_live(<[_]>::to_vec);
    for tracer in &tracers {
        let Some(callback) = tracer.activity else { continue };
        let wanted: Vec<xdal_activity_t> = if tracer.mask == u64::MAX {
            records.to_vec()
        } else {
            records.iter().filter(|r| tracer.wants(r.kind)).copied().collect()
        };
        if !wanted.is_empty() {
            // SAFETY: the tracer creator's callback and user data, valid
            // until its destroy returns, which `call` waits for; the
            // records (and the names they point to) are valid during the call.
            tracer.call(|| unsafe { callback(tracer.user_data as *mut c_void, wanted.as_ptr(), wanted.len()) });
        }
    }
    chrome::activities(records, origins);
}

/// Delivers every activity completed so far, and rewrites the trace file.
pub(crate) fn flush() {
    activity::deliver();
    chrome::write();
}
