//! Activity records: each traced operation is bracketed on its stream by
//! two timestamps the backend writes when the stream gets there
//! (`stream_stamp`, or a host function), so an activity carries when the
//! work ran, not when it was enqueued. Pending activities wait here until
//! their end is written, then go to the tracers: at each flush, and
//! whenever enough have piled up.
use crate::backend::{call, Backend};
use crate::error::XResult;
use crate::lock::IgnorePoison;
use crate::objects::{FunctionObj, StreamObj};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};
use xdal_abi::*;

/// What an activity was, as the caller describes it.
pub(crate) struct Info {
    /// The operation enqueues several commands (a graph replayed node by
    /// node): timed by stamps around them all, not by the backend's timing
    /// of one command.
    pub spans_commands: bool,
    pub kind: xdal_activity_kind,
    pub name: Name,
    pub bytes: u64,
    pub copy_kind: xdal_memcpy_kind,
    pub grid: xdal_dim3_t,
    pub block: xdal_dim3_t,
}

/// An activity's name, kept alive until it is delivered.
pub(crate) enum Name {
    Static(&'static CStr),
    Kernel(Arc<FunctionObj>),
}

impl Name {
    fn as_cstr(&self) -> &CStr {
        match self {
            Name::Static(name) => name,
            Name::Kernel(function) => function.name_cstr(),
        }
    }
}

const ONE: xdal_dim3_t = xdal_dim3_t { x: 1, y: 1, z: 1 };

impl Info {
    pub fn new(kind: xdal_activity_kind, name: &'static CStr) -> Info {
        Info {
            spans_commands: false,
            kind,
            name: Name::Static(name),
            bytes: 0,
            copy_kind: xdal_memcpy_kind::XDAL_MEMCPY_DEFAULT,
            grid: ONE,
            block: ONE,
        }
    }

    pub fn copy(bytes: usize, kind: xdal_memcpy_kind) -> Info {
        let name = match kind {
            xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_HOST => c"memcpy HtoH",
            xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_DEVICE => c"memcpy HtoD",
            xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_HOST => c"memcpy DtoH",
            _ => c"memcpy DtoD",
        };
        Info { bytes: bytes as u64, copy_kind: kind, ..Info::new(xdal_activity_kind::XDAL_ACTIVITY_MEMCPY, name) }
    }

    pub fn set(bytes: usize) -> Info {
        Info { bytes: bytes as u64, ..Info::new(xdal_activity_kind::XDAL_ACTIVITY_MEMSET, c"memset") }
    }

    pub fn kernel(function: Arc<FunctionObj>, grid: xdal_dim3_t, block: xdal_dim3_t) -> Info {
        Info { name: Name::Kernel(function), grid, block, ..Info::new(xdal_activity_kind::XDAL_ACTIVITY_KERNEL, c"") }
    }

    pub fn memory(kind: xdal_activity_kind, name: &'static CStr, bytes: usize) -> Info {
        Info { bytes: bytes as u64, ..Info::new(kind, name) }
    }
}

/// Where an activity was enqueued from: the trace file draws an arrow
/// from there to the work.
#[derive(Clone, Copy)]
pub(crate) struct Origin {
    pub thread: u64,
    pub enqueued_ns: u64,
}

struct Pending {
    info: Info,
    device: i32,
    stream_id: u64,
    correlation: u64,
    origin: Origin,
    /// The operation was refused: its stamps are awaited only so that the
    /// backend never writes to a slot given to another activity, and it is
    /// never reported.
    refused: bool,
}

/// Stamp slots per chunk: a chunk never moves or goes away, so a backend
/// may write to a slot whenever it gets there.
const CHUNK: usize = 1024;

/// Pending activities, each with its two stamp slots (start, end) at the
/// same index: written by the stream, 0 until then.
struct Book {
    entries: Vec<Option<Pending>>,
    stamps: Vec<Box<[AtomicU64]>>,
    free: Vec<usize>,
    live: usize,
}

impl Book {
    /// The two slots of entry `i`.
    fn slots(&self, i: usize) -> &[AtomicU64] {
        &self.stamps[i / CHUNK][(i % CHUNK) * 2..(i % CHUNK) * 2 + 2]
    }

    /// A free entry for `pending`, its slots zeroed.
    fn insert(&mut self, pending: Pending) -> usize {
        let i = self.free.pop().unwrap_or_else(|| {
            let i = self.entries.len();
            self.entries.push(None);
            if i / CHUNK == self.stamps.len() {
                self.stamps.push((0..CHUNK * 2).map(|_| AtomicU64::new(0)).collect());
            }
            i
        });
        self.slots(i).iter().for_each(|slot| slot.store(0, Relaxed));
        self.entries[i] = Some(pending);
        self.live += 1;
        i
    }
}

impl Pending {
    /// An activity of `stream` enqueued (or begun) at `enqueued_ns` by the
    /// calling thread's current call.
    fn new(info: Info, stream: &StreamObj, enqueued_ns: u64) -> Pending {
        Pending {
            info,
            device: stream.device.get(),
            stream_id: stream.id,
            correlation: super::correlation(),
            origin: Origin { thread: super::thread_id(), enqueued_ns },
            refused: false,
        }
    }
}

static BOOK: Mutex<Book> = Mutex::new(Book { entries: Vec::new(), stamps: Vec::new(), free: Vec::new(), live: 0 });

/// Pending activities past which the enqueuing thread delivers the
/// completed ones itself.
const DELIVER_AT: usize = 1024;

unsafe extern "C" fn stamp_now(slot: *mut c_void) {
    // SAFETY: `slot` is a stamp slot, which never goes away.
    unsafe { (*(slot as *const AtomicU64)).store(super::now_ns(), Release) };
}

/// Enqueues a host function writing the time into `slot` on `stream`: the
/// fallback for backends without `time_next_enqueue`.
fn stamp(backend: &'static Backend, stream: &StreamObj, slot: *const AtomicU64) -> XResult<()> {
    call!(backend, launch_host_func(stream.native, Some(stamp_now), slot as *mut c_void))
}

/// Runs `enqueue`, which enqueues one operation on `stream`; while
/// tracing, between two timestamps, recording its activity (`info`).
/// Always inlined: untraced, it must cost the caller one load and nothing
/// else.
#[inline(always)]
pub(crate) fn traced(
    backend: &'static Backend,
    stream: &StreamObj,
    info: impl FnOnce() -> Info,
    enqueue: impl FnOnce() -> XResult<()>,
) -> XResult<()> {
    if !super::on() {
        return enqueue();
    }
    around(backend, stream, info(), enqueue)
}

/// `traced` for something done on the host inside the call (synchronous
/// copies and sets, allocations and frees), on the track of `device`'s
/// default stream.
#[inline]
pub(crate) fn host_traced<T>(
    backend: &'static Backend,
    device: i32,
    info: impl FnOnce() -> Info,
    work: impl FnOnce() -> XResult<T>,
) -> XResult<T> {
    if !super::on() {
        return work();
    }
    let start_ns = super::now_ns();
    let result = work();
    if result.is_ok() {
        if let Ok(stream) = backend.default_stream(device) {
            host_timed(stream, info(), start_ns);
        }
    }
    result
}

#[inline(never)]
fn around(
    backend: &'static Backend,
    stream: &StreamObj,
    info: Info,
    enqueue: impl FnOnce() -> XResult<()>,
) -> XResult<()> {
    let one_command = !info.spans_commands;
    let pending = Pending::new(info, stream, super::call_start());
    let (index, slots) = {
        let mut book = BOOK.lock().ignore_poison();
        let index = book.insert(pending);
        (index, book.slots(index).as_ptr())
    };
    let result = if one_command && backend.table.time_next_enqueue.is_some() {
        let result = call!(backend, time_next_enqueue(slots as *mut u64)).and_then(|()| enqueue());
        if result.is_err() {
            // Nothing took the slots: cancel, so that no later operation
            // writes to them, and let the entry go.
            let _ = call!(backend, time_next_enqueue(std::ptr::null_mut()));
            // SAFETY: the slots are two, in a chunk that never goes away.
            unsafe { (*slots.add(1)).store(1, Release) };
        }
        result
    } else {
        let started = stamp(backend, stream, slots);
        let result = enqueue();
        // SAFETY: as above.
        let end = unsafe { slots.add(1) };
        if started.is_err() || stamp(backend, stream, end).is_err() {
            // SAFETY: as above.
            unsafe { (*end).store(1, Release) };
        }
        result
    };
    let live = {
        let mut book = BOOK.lock().ignore_poison();
        if result.is_err() {
            if let Some(entry) = book.entries[index].as_mut() {
                entry.refused = true;
            }
        }
        book.live
    };
    if live >= DELIVER_AT {
        deliver();
    }
    result
}

/// Records an activity that ran on the host inside the call (synchronous
/// copies, allocations), timed by `start_ns` and now, on `stream`'s track.
fn host_timed(stream: &StreamObj, info: Info, start_ns: u64) {
    let end_ns = super::now_ns();
    let pending = Pending::new(info, stream, start_ns);
    let mut book = BOOK.lock().ignore_poison();
    let index = book.insert(pending);
    let slots = book.slots(index);
    slots[0].store(start_ns, Relaxed);
    slots[1].store(end_ns.max(1), Release);
}

/// Activities handed over per batch: small enough that the buffers stay
/// off the allocator's mmap path.
const BATCH: usize = 256;

/// Delivers every completed activity, a batch at a time.
pub(crate) fn deliver() {
    let mut from = 0;
    loop {
        let (done, next) = take_completed(from);
        if done.is_empty() && next.is_none() {
            return;
        }
        hand_over(&done);
        match next {
            Some(next) => from = next,
            None => return,
        }
    }
}

/// Up to `BATCH` completed activities from entry `from` on, with their
/// times, and where to go on (None: the end was reached).
fn take_completed(from: usize) -> (Vec<(Pending, u64, u64)>, Option<usize>) {
    let mut done = Vec::with_capacity(BATCH);
    let mut book = BOOK.lock().ignore_poison();
    let book = &mut *book;
    for i in from..book.entries.len() {
        if done.len() == BATCH {
            return (done, Some(i));
        }
        if book.entries[i].is_none() {
            continue;
        }
        let slots = &book.stamps[i / CHUNK][(i % CHUNK) * 2..(i % CHUNK) * 2 + 2];
        let end = slots[1].load(Acquire);
        if end == 0 {
            continue;
        }
        let start = slots[0].load(Acquire);
        let pending = book.entries[i].take().expect("checked above");
        book.free.push(i);
        book.live -= 1;
        if !pending.refused {
            done.push((pending, start.min(end), end));
        }
    }
    (done, None)
}

fn hand_over(done: &[(Pending, u64, u64)]) {
    let records: Vec<xdal_activity_t> = done
        .iter()
        .map(|(p, start, end)| xdal_activity_t {
            struct_size: std::mem::size_of::<xdal_activity_t>(),
            kind: p.info.kind,
            device: p.device,
            stream_id: p.stream_id,
            correlation_id: p.correlation,
            start_ns: *start,
            end_ns: *end,
            name: p.info.name.as_cstr().as_ptr(),
            bytes: p.info.bytes,
            copy_kind: p.info.copy_kind,
            grid: p.info.grid,
            block: p.info.block,
        })
        .collect();
    let origins: Vec<Origin> = done.iter().map(|(p, ..)| p.origin).collect();
    super::deliver_records(&records, &origins);
}
