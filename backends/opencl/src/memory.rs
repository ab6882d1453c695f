//! Device memory: SVM allocations of the one context, so a device pointer
//! is a plain address valid on every device, and copies and fills through
//! the SVM commands (which take SVM and host pointers alike).
use crate::command;
use crate::error::{failure, ClCall, ClResult};
use crate::event::ClEvent;
use crate::stream::{Command, Stream};
use cl3::memory::CL_MEM_READ_WRITE;
use cl3::types::{cl_command_queue, cl_event};
use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};
use xdal_backend_support::overlap::{self, Move};

/// xdal's promise for device pointers, whatever less the runtime gives.
pub(crate) const ALIGNMENT: usize = 256;

/// The alignment clSVMAlloc gives without asking (that of the largest
/// data type; PoCL refuses to be asked for more): 128 bytes as OpenCL's
/// `long16` is the largest type, and where an allocation comes back less
/// aligned than `ALIGNMENT` it is padded and the pointer moved up.
const RUNTIME_ALIGNMENT: usize = 128;

/// Device pointers that are not the runtime's own base (moved up to
/// `ALIGNMENT`), and their base, for clSVMFree.
static MOVED: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

pub(crate) fn alloc(device: usize, size: usize) -> ClResult<*mut c_void> {
    let props = &crate::opencl().device(device).properties;
    svm_alloc(CL_MEM_READ_WRITE, size, ALIGNMENT).ok_or_else(|| {
        failure!(
            XDAL_ERROR_OUT_OF_MEMORY,
            "clSVMAlloc gave no memory for {size} bytes on device {device} ({}: {} bytes in all, at most {} in one \
             allocation)",
            props.name,
            props.global_memory,
            props.max_allocation
        )
    })
}

/// An SVM allocation of `size` bytes with `flags`, aligned to `alignment`
/// (a power of two of at least `RUNTIME_ALIGNMENT`); None when the runtime
/// gives none (clSVMAlloc says no by returning NULL, out of memory or not).
fn svm_alloc(flags: u64, size: usize, alignment: usize) -> Option<*mut c_void> {
    let padded = size.checked_add(alignment - RUNTIME_ALIGNMENT)?;
    // SAFETY: the context is live; the flags are valid; alignment 0 asks
    // for the runtime's own.
    let base = unsafe { cl3::memory::svm_alloc(crate::opencl().context.0, flags, padded, 0) }.ok()?;
    let aligned = (base as usize).next_multiple_of(alignment);
    if aligned != base as usize {
        MOVED.lock().unwrap_or_else(|p| p.into_inner()).insert(aligned, base as usize);
    }
    Some(aligned as *mut c_void)
}

/// Whether every device shares fine-grain SVM with the host: memory both
/// the host and the devices' kernels reach without mapping.
fn fine_grain() -> bool {
    static FINE: OnceLock<bool> = OnceLock::new();
    *FINE.get_or_init(|| {
        crate::opencl().devices.iter().all(|d| {
            cl3::device::get_device_info(d.id, cl3::device::CL_DEVICE_SVM_CAPABILITIES)
                .map(|caps| u64::from(caps) & cl3::device::CL_DEVICE_SVM_FINE_GRAIN_BUFFER != 0)
                .unwrap_or(false)
        })
    })
}

/// Host allocations made without the runtime (no fine-grain SVM), with
/// their layouts for freeing.
static HOST_HEAP: Mutex<BTreeMap<usize, Layout>> = Mutex::new(BTreeMap::new());

/// Host memory's alignment: a page, as the front's own host memory has.
const HOST_ALIGNMENT: usize = 4096;

/// Pinned host memory: fine-grain SVM, which the runtime keeps resident
/// and which kernels may read and write too (CUDA's mapped pinned memory).
/// Where the devices lack fine-grain SVM, page-aligned memory of the
/// process's heap (the SVM copy commands take any host pointer).
pub(crate) fn alloc_host(size: usize) -> ClResult<*mut c_void> {
    let refused = || failure!(XDAL_ERROR_OUT_OF_MEMORY, "no pinned host memory for {size} bytes");
    if fine_grain() {
        let flags = CL_MEM_READ_WRITE | cl3::memory::CL_MEM_SVM_FINE_GRAIN_BUFFER;
        return svm_alloc(flags, size, HOST_ALIGNMENT).ok_or_else(refused);
    }
    let layout = Layout::from_size_align(size.max(1), HOST_ALIGNMENT).map_err(|_| refused())?;
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc(layout) };
    if ptr.is_null() {
        return Err(refused());
    }
    HOST_HEAP.lock().unwrap_or_else(|p| p.into_inner()).insert(ptr as usize, layout);
    Ok(ptr.cast())
}

pub(crate) fn free_host(ptr: *mut c_void) -> ClResult<()> {
    match HOST_HEAP.lock().unwrap_or_else(|p| p.into_inner()).remove(&(ptr as usize)) {
        // SAFETY: allocated by `alloc_host` with this layout, freed once.
        Some(layout) => unsafe { std::alloc::dealloc(ptr.cast(), layout) },
        None => free(ptr)?,
    }
    Ok(())
}

pub(crate) fn free(ptr: *mut c_void) -> ClResult<()> {
    let base = MOVED.lock().unwrap_or_else(|p| p.into_inner()).remove(&(ptr as usize)).unwrap_or(ptr as usize);
    // SAFETY: the front passes a live allocation's pointer, whose base this
    // is, after the device's pending work.
    unsafe { cl3::memory::svm_free(crate::opencl().context.0, base as *mut c_void) }.cl("clSVMFree")
}

/// A synchronous copy on device 0's own queue (any queue of the context
/// reaches every SVM allocation); the front has ordered it after the
/// current device's default stream.
pub(crate) fn copy(dst: *mut c_void, src: *const c_void, bytes: usize) -> ClResult<()> {
    let route = CopyRoute::plan(dst, src, bytes)?;
    let queue = crate::opencl().device(0).queue;
    // SAFETY: the front checked both ranges; the call waits for the copy.
    let copy = |queue, event| unsafe { route.enqueue(queue, event) };
    enqueue_and_wait("clEnqueueSVMMemcpy", "xdal_memcpy", copy, queue)
}

pub(crate) fn copy_async(dst: *mut c_void, src: *const c_void, bytes: usize, stream: &Stream) -> ClResult<()> {
    let route = CopyRoute::plan(dst, src, bytes)?;
    if matches!(route.moves, Move::Nothing) {
        return Ok(());
    }
    stream.enqueue("clEnqueueSVMMemcpy", |queue, event| {
        // SAFETY: the front checked both ranges; the caller keeps them
        // valid until the copy has run, as for any asynchronous copy.
        unsafe { route.enqueue(queue, event) }
    })
}

/// A copy as the ABI defines it, memmove's result, out of SVM copy
/// commands, which refuse overlapping ranges (`CL_MEM_COPY_OVERLAP`):
/// pieces in a safe order, or two copies through a staging buffer.
struct CopyRoute {
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    moves: Move,
    /// The staging buffer of a `Move::Staged`, freed in queue order.
    staging: *mut c_void,
}

impl CopyRoute {
    fn plan(dst: *mut c_void, src: *const c_void, bytes: usize) -> ClResult<CopyRoute> {
        let moves = overlap::plan(dst as usize, src as usize, bytes);
        let mut staging = std::ptr::null_mut();
        if moves == Move::Staged {
            // SAFETY: the context is live; plain read-write SVM of the
            // runtime's own alignment.
            staging = unsafe { cl3::memory::svm_alloc(crate::opencl().context.0, CL_MEM_READ_WRITE, bytes, 0) }
                .map_err(|_| {
                    failure!(
                        XDAL_ERROR_OUT_OF_MEMORY,
                        "a copy of {bytes} bytes between overlapping ranges {} bytes apart needs a staging buffer of \
                         its size, and clSVMAlloc gave none",
                        (dst as usize).abs_diff(src as usize)
                    )
                })?;
        }
        Ok(CopyRoute { dst, src, bytes, moves, staging })
    }

    /// Enqueues the copies on `queue` without waiting; the last command's
    /// event goes to `event` (NULL: none wanted; nothing is written when
    /// there is nothing to copy).
    ///
    /// # Safety
    /// Both ranges must be SVM or host memory that stays valid until the
    /// copies have run; `event` is NULL or writable.
    unsafe fn enqueue(&self, queue: cl_command_queue, event: *mut cl_event) -> Result<(), i32> {
        let none = std::ptr::null_mut();
        let copy = |dst: *mut c_void, src: *const c_void, bytes: usize, event: *mut cl_event| {
            // SAFETY: every copy below lies within the caller's ranges or
            // the staging buffer, and its two ranges are disjoint by the
            // plan's construction.
            unsafe { command::copy(queue, dst, src, bytes, event) }
        };
        match &self.moves {
            Move::Nothing => Ok(()),
            Move::Direct => copy(self.dst, self.src, self.bytes, event),
            Move::Pieces(pieces) => {
                let last = pieces.len().saturating_sub(1);
                pieces.iter().enumerate().try_for_each(|(i, piece)| {
                    let event = if i == last { event } else { none };
                    copy(piece.dst as *mut c_void, piece.src as *const c_void, piece.bytes, event)
                })
            }
            Move::Staged => {
                let staged = copy(self.staging, self.src, self.bytes, none)
                    .and_then(|()| copy(self.dst, self.staging, self.bytes, none))
                    .and_then(|()| {
                        let pointers = [self.staging.cast_const()];
                        // SAFETY: the staging buffer is this context's SVM;
                        // no callback: the runtime calls clSVMFree itself
                        // once the copies before it in the queue are done.
                        unsafe {
                            cl3::command_queue::enqueue_svm_free(
                                queue,
                                1,
                                pointers.as_ptr(),
                                None,
                                std::ptr::null_mut(),
                                0,
                                std::ptr::null(),
                            )
                        }
                    });
                match staged {
                    // SAFETY: the caller's `event` is NULL or writable.
                    Ok(free) if !event.is_null() => unsafe { event.write(free) },
                    Ok(free) => drop(ClEvent(free)),
                    Err(_) => {
                        // Whatever was enqueued reads the buffer until done.
                        let _ = cl3::command_queue::finish(queue);
                        // SAFETY: no command uses the buffer any more.
                        let _ = unsafe { cl3::memory::svm_free(crate::opencl().context.0, self.staging) };
                    }
                }
                staged.map(drop)
            }
        }
    }
}

/// Runs `command` on `queue` with an event, and waits for it: a
/// synchronous operation (the queue is the device's own; the front has
/// ordered the call after the current device's default stream).
fn enqueue_and_wait(what: &str, waiter: &str, command: impl Command, queue: cl_command_queue) -> ClResult<()> {
    let mut raw: cl_event = std::ptr::null_mut();
    command(queue, &mut raw).cl(what)?;
    // No event: the command had nothing to do.
    if raw.is_null() {
        return Ok(());
    }
    ClEvent(raw).wait(waiter)
}

pub(crate) fn set(dst: *mut c_void, value: u8, bytes: usize) -> ClResult<()> {
    let queue = crate::opencl().device(0).queue;
    // SAFETY: the front checked the range; the call waits for the fill.
    let fill = |queue, event| unsafe { command::fill(queue, dst, value, bytes, event) };
    enqueue_and_wait("clEnqueueSVMMemFill", "xdal_memset", fill, queue)
}

#[inline]
pub(crate) fn set_async(dst: *mut c_void, value: u8, bytes: usize, stream: &Stream) -> ClResult<()> {
    // SAFETY: the front checked the range; the memory stays allocated until
    // the stream's work is done (xdal_free waits for it).
    stream.enqueue("clEnqueueSVMMemFill", |queue, event| unsafe { command::fill(queue, dst, value, bytes, event) })
}
