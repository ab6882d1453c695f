//! The calls of the stream paths (enqueues, and a launch's arguments),
//! straight through the runtime's entry points. cl3's own enqueue wrappers
//! always ask the runtime for the command's event; these take the event
//! pointer as OpenCL does (NULL: none), so that a command nothing waits
//! for costs no event: no reference taken at the enqueue and none to give
//! back after it, which on PoCL is a tenth of a small command's cost on the
//! calling thread. And they call the entry points as a C program does,
//! through pointers resolved once: cl3's table costs each call a lazy
//! load's test, an optional pointer's unwrapping and its own frame, some
//! 30 instructions of a fill's budget, and more for each argument a launch
//! sets.
use cl3::error_codes::DLOPEN_RUNTIME_LOAD_FAILED;
use cl3::types::{cl_command_queue, cl_event, cl_int, cl_kernel, cl_uint};
use std::ffi::c_void;
use std::ptr::null;
use std::sync::OnceLock;

/// The entry points the stream paths call, as the OpenCL headers declare
/// them.
struct Entries {
    fill: unsafe extern "C" fn(
        cl_command_queue,
        *mut c_void,
        *const c_void,
        usize,
        usize,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
    copy: unsafe extern "C" fn(
        cl_command_queue,
        cl_uint,
        *mut c_void,
        *const c_void,
        usize,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
    kernel: unsafe extern "C" fn(
        cl_command_queue,
        cl_kernel,
        cl_uint,
        *const usize,
        *const usize,
        *const usize,
        cl_uint,
        *const cl_event,
        *mut cl_event,
    ) -> cl_int,
    marker: unsafe extern "C" fn(cl_command_queue, cl_uint, *const cl_event, *mut cl_event) -> cl_int,
    set_arg: unsafe extern "C" fn(cl_kernel, cl_uint, usize, *const c_void) -> cl_int,
    set_arg_svm: unsafe extern "C" fn(cl_kernel, cl_uint, *const c_void) -> cl_int,
    barrier: unsafe extern "C" fn(cl_command_queue, cl_uint, *const cl_event, *mut cl_event) -> cl_int,
    /// Keeps the entry points loaded.
    _library: libloading::Library,
}

static ENTRIES: OnceLock<Entries> = OnceLock::new();

/// The runtime's entry points: the library cl3 loaded (the same names, in
/// the same order: `OPENCL_DYLIB_PATH`'s entries, then libOpenCL.so.1), so
/// that both reach the same runtime. Set once loaded; a runtime that
/// cannot be loaded is tried again (out of line) at each call, which only
/// a failed start makes.
#[inline]
fn api() -> Result<&'static Entries, i32> {
    match ENTRIES.get() {
        Some(entries) => Ok(entries),
        None => load_entries(),
    }
}

#[cold]
#[inline(never)]
fn load_entries() -> Result<&'static Entries, i32> {
    let entries = load().ok_or(DLOPEN_RUNTIME_LOAD_FAILED)?;
    Ok(ENTRIES.get_or_init(|| entries))
}

fn load() -> Option<Entries> {
    let paths = std::env::var("OPENCL_DYLIB_PATH").unwrap_or_default();
    let library = paths.split(';').filter(|p| !p.is_empty()).chain(["libOpenCL.so.1"]).find_map(|path| {
        // SAFETY: the ICD loader (or an OpenCL runtime) runs no
        // initializer that could conflict with the process; cl3 opened it
        // already.
        unsafe { libloading::Library::new(path) }.ok()
    })?;
    // SAFETY: each symbol is the OpenCL 2.0 entry point of that name, whose
    // C signature the field's type spells.
    unsafe {
        Some(Entries {
            fill: *library.get(b"clEnqueueSVMMemFill\0").ok()?,
            copy: *library.get(b"clEnqueueSVMMemcpy\0").ok()?,
            kernel: *library.get(b"clEnqueueNDRangeKernel\0").ok()?,
            marker: *library.get(b"clEnqueueMarkerWithWaitList\0").ok()?,
            set_arg: *library.get(b"clSetKernelArg\0").ok()?,
            set_arg_svm: *library.get(b"clSetKernelArgSVMPointer\0").ok()?,
            barrier: *library.get(b"clEnqueueBarrierWithWaitList\0").ok()?,
            _library: library,
        })
    }
}

/// An entry point's result.
#[inline]
fn status(code: cl_int) -> Result<(), i32> {
    match code {
        0 => Ok(()),
        code => Err(code),
    }
}

/// Enqueues a fill of `bytes` bytes at `dst` with the byte `value`.
///
/// # Safety
/// `[dst, dst + bytes)` must be SVM memory of the queue's context that
/// stays allocated until the fill has run; `event` is NULL or writable.
pub(crate) unsafe fn fill(
    queue: cl_command_queue,
    dst: *mut c_void,
    value: u8,
    bytes: usize,
    event: *mut cl_event,
) -> Result<(), i32> {
    // OpenCL copies the one-byte pattern at the call.
    let pattern = (&value as *const u8).cast();
    status((api()?.fill)(queue, dst, pattern, 1, bytes, 0, null(), event))
}

/// Enqueues a copy of `bytes` bytes from `src` to `dst`, without waiting.
///
/// # Safety
/// Both ranges must be SVM or host memory that stays valid until the copy
/// has run, and must not overlap; `event` is NULL or writable.
pub(crate) unsafe fn copy(
    queue: cl_command_queue,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    event: *mut cl_event,
) -> Result<(), i32> {
    status((api()?.copy)(queue, 0, dst, src, bytes, 0, null(), event))
}

/// Enqueues `kernel` over `global` work items (one entry per dimension) in
/// work-groups of `local` (NULL: the runtime's choice).
///
/// # Safety
/// A live queue and kernel with every argument set; `local` is NULL or
/// holds `global.len()` entries; `event` is NULL or writable.
pub(crate) unsafe fn kernel(
    queue: cl_command_queue,
    kernel: cl_kernel,
    global: &[usize],
    local: *const usize,
    event: *mut cl_event,
) -> Result<(), i32> {
    let dims = global.len() as u32;
    status((api()?.kernel)(queue, kernel, dims, null(), global.as_ptr(), local, 0, null(), event))
}

/// Enqueues a marker: a command that completes when everything before it
/// in the queue has.
///
/// # Safety
/// A live queue; `event` is NULL or writable.
pub(crate) unsafe fn marker(queue: cl_command_queue, event: *mut cl_event) -> Result<(), i32> {
    status((api()?.marker)(queue, 0, null(), event))
}

/// Enqueues a barrier: later commands wait for `waits` too.
///
/// # Safety
/// A live queue; `waits` holds live events; `event` is NULL or writable.
pub(crate) unsafe fn barrier(queue: cl_command_queue, waits: &[cl_event], event: *mut cl_event) -> Result<(), i32> {
    status((api()?.barrier)(queue, waits.len() as u32, waits.as_ptr(), event))
}

/// Sets argument `index` of `kernel` to the `size` bytes at `value`
/// (NULL: local memory of that size).
///
/// # Safety
/// A live kernel; `value` is NULL or holds `size` readable bytes, which
/// the runtime copies at the call.
pub(crate) unsafe fn set_arg(kernel: cl_kernel, index: u32, size: usize, value: *const c_void) -> Result<(), i32> {
    status((api()?.set_arg)(kernel, index, size, value))
}

/// Sets pointer argument `index` of `kernel` to the SVM address `address`
/// (NULL too, which OpenCL allows).
///
/// # Safety
/// A live kernel whose parameter `index` is a global pointer.
pub(crate) unsafe fn set_arg_svm(kernel: cl_kernel, index: u32, address: *const c_void) -> Result<(), i32> {
    status((api()?.set_arg_svm)(kernel, index, address))
}
