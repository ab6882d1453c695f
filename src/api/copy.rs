//! Copies and sets, synchronous and stream-ordered. Both sides of every
//! copy are classified against the registry before the backend sees them:
//! a range that leaves its allocation, freed device memory, or a kind that
//! contradicts the pointers is refused, for async calls at enqueue time.
use crate::api::memory::address_device;
use crate::backend::{backend, call, Backend};
use crate::error::{bail, boundary, require, XResult};
use crate::graph::capture;
use crate::graph::node::Op;
use crate::registry::{MemoryType, Place, REGISTRY};
use crate::threads::current_device;
use crate::trace::activity::{self, Info};
use std::ffi::{c_int, c_void};
use xdal_abi::xdal_memcpy_kind::*;
use xdal_abi::*;

/// Classifies `[addr, addr + bytes)`, refusing ranges that run past their
/// allocation and device addresses outside any live allocation. The
/// thread's cached answer is inlined into every check; the registry's
/// search, and the messages, are out of line.
#[inline]
pub(crate) fn classify(
    backend: &Backend,
    addr: usize,
    bytes: usize,
    role: &(impl std::fmt::Display + ?Sized),
) -> XResult<MemoryType> {
    match REGISTRY.cached_sides([addr], bytes) {
        Some([side]) => Ok(side),
        None => classify_in_registry(backend, addr, bytes, &role),
    }
}

#[inline(never)]
fn classify_in_registry(
    backend: &Backend,
    addr: usize,
    bytes: usize,
    role: &dyn std::fmt::Display,
) -> XResult<MemoryType> {
    match REGISTRY.place(addr, |addr| address_device(backend, addr)) {
        Place::Allocated(a) => {
            let room = a.room_after(addr);
            if bytes > room {
                bail!(
                    XDAL_ERROR_INVALID_POINTER,
                    "{bytes} bytes at {role} {addr:#x} run past the end of a {}-byte allocation at {:#x} by {} bytes",
                    a.size,
                    a.base,
                    bytes - room
                );
            }
            Ok(a.memory)
        }
        Place::Freed(device) => bail!(
            XDAL_ERROR_INVALID_POINTER,
            "{role} {addr:#x} lies in device {device}'s memory but in no live allocation (freed already?)"
        ),
        // A host range that wraps past the end of the address space can
        // only be a wrong pointer or size: reading it would fault on a
        // worker thread, long after the call returned.
        Place::Unregistered if addr.checked_add(bytes).is_none() => {
            bail!(XDAL_ERROR_INVALID_POINTER, "{bytes} bytes at {role} {addr:#x} run past the end of the address space")
        }
        Place::Unregistered => Ok(MemoryType::Unregistered),
    }
}

fn kind_name(kind: xdal_memcpy_kind) -> &'static str {
    match kind {
        XDAL_MEMCPY_HOST_TO_HOST => "XDAL_MEMCPY_HOST_TO_HOST",
        XDAL_MEMCPY_HOST_TO_DEVICE => "XDAL_MEMCPY_HOST_TO_DEVICE",
        XDAL_MEMCPY_DEVICE_TO_HOST => "XDAL_MEMCPY_DEVICE_TO_HOST",
        XDAL_MEMCPY_DEVICE_TO_DEVICE => "XDAL_MEMCPY_DEVICE_TO_DEVICE",
        XDAL_MEMCPY_DEFAULT => "XDAL_MEMCPY_DEFAULT",
    }
}

fn parse_kind(kind: xdal_memcpy_kind_raw) -> XResult<xdal_memcpy_kind> {
    match xdal_memcpy_kind::from_raw(kind) {
        Some(kind) => Ok(kind),
        None => bail!(XDAL_ERROR_INVALID_VALUE, "{kind} is not an xdal_memcpy_kind_t"),
    }
}

/// A checked copy: the kind resolved, both sides validated.
struct CheckedCopy {
    dst: *mut c_void,
    src: *const c_void,
    kind: xdal_memcpy_kind,
}

/// Validates a copy of `bytes > 0` bytes and resolves its kind. The
/// common case (both sides answered from this thread's cache, the kind
/// consistent) is inlined into the caller; anything else takes the path
/// that classifies from the registry and explains a refusal.
#[inline]
fn check_copy(
    backend: &Backend,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: xdal_memcpy_kind,
) -> XResult<CheckedCopy> {
    if let Some([dst_side, src_side]) = REGISTRY.cached_sides([dst as usize, src as usize], bytes) {
        let inferred = infer_kind(src_side.is_device(), dst_side.is_device());
        if !dst.is_null() && !src.is_null() && (kind == XDAL_MEMCPY_DEFAULT || kind == inferred) {
            return Ok(CheckedCopy { dst, src, kind: inferred });
        }
    }
    check_copy_slowly(backend, dst, src, bytes, kind)
}

/// The kind of a copy between host or device memory.
#[inline]
fn infer_kind(src_is_device: bool, dst_is_device: bool) -> xdal_memcpy_kind {
    match (src_is_device, dst_is_device) {
        (false, false) => XDAL_MEMCPY_HOST_TO_HOST,
        (false, true) => XDAL_MEMCPY_HOST_TO_DEVICE,
        (true, false) => XDAL_MEMCPY_DEVICE_TO_HOST,
        (true, true) => XDAL_MEMCPY_DEVICE_TO_DEVICE,
    }
}

/// `check_copy` from the registry: classifies both sides, and says why
/// when it refuses.
#[inline(never)]
fn check_copy_slowly(
    backend: &Backend,
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: xdal_memcpy_kind,
) -> XResult<CheckedCopy> {
    require(dst, "dst")?;
    require(src, "src")?;
    let (dst_side, src_side) =
        (classify(backend, dst as usize, bytes, "destination")?, classify(backend, src as usize, bytes, "source")?);
    let inferred = infer_kind(src_side.is_device(), dst_side.is_device());
    if kind != XDAL_MEMCPY_DEFAULT && kind != inferred {
        let (want_src, want_dst) = match kind {
            XDAL_MEMCPY_HOST_TO_HOST => (false, false),
            XDAL_MEMCPY_HOST_TO_DEVICE => (false, true),
            XDAL_MEMCPY_DEVICE_TO_HOST => (true, false),
            _ => (true, true),
        };
        let (role, addr, wanted) = if want_src != src_side.is_device() {
            ("source", src as usize, want_src)
        } else {
            ("destination", dst as usize, want_dst)
        };
        let memory = |device: bool| {
            if device {
                "device memory"
            } else {
                "host memory"
            }
        };
        bail!(
            XDAL_ERROR_INVALID_POINTER,
            "{} needs {} as the {role}, but {addr:#x} is {}",
            kind_name(kind),
            memory(wanted),
            memory(!wanted)
        );
    }
    Ok(CheckedCopy { dst, src, kind: inferred })
}

/// Checks that `dst` can be set: `bytes` of live device memory.
#[inline]
fn check_set(backend: &Backend, dst: *mut c_void, bytes: usize) -> XResult<()> {
    // The thread's cache answers a set into a live allocation (never for
    // NULL: no allocation is at address 0); the rest, refusals included,
    // takes the registry's search.
    if REGISTRY.cached_device(dst as usize, bytes).is_some() {
        return Ok(());
    }
    check_set_in_registry(backend, dst, bytes)
}

/// The rest of `check_set`, whose cache had no answer: the registry's
/// search, and the refusals.
#[inline(never)]
fn check_set_in_registry(backend: &Backend, dst: *mut c_void, bytes: usize) -> XResult<()> {
    require(dst, "dst")?;
    if !classify_in_registry(backend, dst as usize, bytes, &"destination")?.is_device() {
        bail!(XDAL_ERROR_INVALID_POINTER, "{dst:p} is not device memory");
    }
    Ok(())
}

/// Orders a synchronous copy or set (`what`) after the current device's
/// default stream. Refused while a capture's mode forbids synchronous
/// copies, or while that default stream captures.
fn after_default_stream(backend: &'static Backend, what: &str) -> XResult<()> {
    crate::threads::refuse_wait_in_callback(what)?;
    capture::check_unsafe_call(what)?;
    if let Some(default) = backend.existing_default_stream(current_device()) {
        capture::check_stream_wait(default, &format!("{what}, ordered after a capturing default stream,"))?;
        // A sticky error of the default stream belongs to that stream's
        // work, not to this copy: the wait is what matters here.
        let _ = call!(backend, stream_synchronize(default.native));
    }
    Ok(())
}

/// Copies `bytes` bytes and returns when they are there. `kind` must match
/// the pointers (`XDAL_MEMCPY_DEFAULT` infers it). Ordered after the
/// current device's default stream. `bytes == 0` is a no-op. Ranges may
/// overlap: the result is memmove's.
#[no_mangle]
pub extern "C" fn xdal_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: xdal_memcpy_kind_raw,
) -> xdal_status_t {
    boundary(c"xdal_memcpy", || {
        let kind = parse_kind(kind)?;
        let backend = backend()?;
        if bytes == 0 {
            return Ok(());
        }
        let copy = check_copy(backend, dst, src, bytes, kind)?;
        after_default_stream(backend, "xdal_memcpy")?;
        let device = current_device();
        activity::host_traced(
            backend,
            device,
            || Info::copy(bytes, copy.kind),
            || call!(backend, mem_copy(copy.dst, copy.src, bytes, copy.kind)),
        )
    })
}

/// Enqueues a copy on `stream` (NULL: the current device's default stream).
/// Every check happens now, at enqueue time; the buffers must stay valid
/// until the stream reaches the copy. Ranges may overlap: the result is
/// memmove's.
#[no_mangle]
pub extern "C" fn xdal_memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    bytes: usize,
    kind: xdal_memcpy_kind_raw,
    stream: xdal_stream_t,
) -> xdal_status_t {
    boundary(c"xdal_memcpy_async", || {
        let kind = parse_kind(kind)?;
        let stream = crate::objects::stream(stream)?;
        let backend = backend()?;
        if bytes == 0 {
            return Ok(());
        }
        let copy = check_copy(backend, dst, src, bytes, kind)?;
        if crate::observe::any() {
            return copy_async_watched(backend, &stream, copy, bytes);
        }
        crate::dispatch::stream::copy_async(backend, &stream, copy.dst, copy.src, bytes, copy.kind)
    })
}

/// `xdal_memcpy_async`'s enqueue while something watches calls (a capture
/// active somewhere, a tracer): recorded into a capture, or traced. Out of
/// line, so that the common path is the plain enqueue alone.
#[cold]
#[inline(never)]
fn copy_async_watched(
    backend: &'static Backend,
    stream: &std::sync::Arc<crate::objects::StreamObj>,
    copy: CheckedCopy,
    bytes: usize,
) -> XResult<()> {
    if capture::capturing(stream) {
        let (dst, src) = (copy.dst as usize, copy.src as usize);
        return capture::record_on(stream, || Op::Copy { dst, src, bytes, kind: copy.kind });
    }
    activity::traced(
        backend,
        stream,
        || Info::copy(bytes, copy.kind),
        || crate::dispatch::stream::copy_async(backend, stream, copy.dst, copy.src, bytes, copy.kind),
    )
}

/// Copies `bytes` bytes from device `src_device`'s memory to device
/// `dst_device`'s memory and returns when they are there. Ranges may
/// overlap (one device): the result is memmove's.
#[no_mangle]
pub extern "C" fn xdal_memcpy_peer(
    dst: *mut c_void,
    dst_device: c_int,
    src: *const c_void,
    src_device: c_int,
    bytes: usize,
) -> xdal_status_t {
    boundary(c"xdal_memcpy_peer", || {
        let backend = backend()?;
        backend.device(dst_device)?;
        backend.device(src_device)?;
        if bytes == 0 {
            return Ok(());
        }
        require(dst, "dst")?;
        require(src, "src")?;
        for (role, addr, device) in [("destination", dst as usize, dst_device), ("source", src as usize, src_device)] {
            if classify(backend, addr, bytes, role)? != MemoryType::Device(device) {
                bail!(XDAL_ERROR_INVALID_POINTER, "the {role} {addr:#x} is not memory of device {device}");
            }
        }
        after_default_stream(backend, "xdal_memcpy_peer")?;
        let kind = XDAL_MEMCPY_DEVICE_TO_DEVICE;
        activity::host_traced(
            backend,
            dst_device,
            || Info::copy(bytes, kind),
            || crate::dispatch::memory::copy_peer(backend, dst, dst_device, src, src_device, bytes),
        )
    })
}

/// Sets `bytes` bytes of device memory to the low byte of `value`, and
/// returns when done. Ordered after the current device's default stream.
#[no_mangle]
pub extern "C" fn xdal_memset(dst: *mut c_void, value: c_int, bytes: usize) -> xdal_status_t {
    boundary(c"xdal_memset", || {
        let backend = backend()?;
        if bytes == 0 {
            return Ok(());
        }
        check_set(backend, dst, bytes)?;
        after_default_stream(backend, "xdal_memset")?;
        activity::host_traced(
            backend,
            current_device(),
            || Info::set(bytes),
            || crate::dispatch::memory::set(backend, dst, value, bytes),
        )
    })
}

/// Enqueues a set of `bytes` bytes of device memory to the low byte of
/// `value` on `stream`; checked at enqueue time.
#[no_mangle]
pub extern "C" fn xdal_memset_async(
    dst: *mut c_void,
    value: c_int,
    bytes: usize,
    stream: xdal_stream_t,
) -> xdal_status_t {
    boundary(c"xdal_memset_async", || {
        let stream = crate::objects::stream(stream)?;
        let backend = backend()?;
        if bytes == 0 {
            return Ok(());
        }
        check_set(backend, dst, bytes)?;
        if crate::observe::any() {
            return set_async_watched(backend, &stream, dst, value, bytes);
        }
        crate::dispatch::stream::set_async(backend, &stream, dst, value, bytes)
    })
}

/// `xdal_memset_async`'s enqueue while something watches calls: recorded
/// into a capture, or traced. Out of line, as `copy_async_watched`.
#[cold]
#[inline(never)]
fn set_async_watched(
    backend: &'static Backend,
    stream: &std::sync::Arc<crate::objects::StreamObj>,
    dst: *mut c_void,
    value: c_int,
    bytes: usize,
) -> XResult<()> {
    if capture::capturing(stream) {
        return capture::record_on(stream, || Op::Set { dst: dst as usize, value, bytes });
    }
    activity::traced(
        backend,
        stream,
        || Info::set(bytes),
        || crate::dispatch::stream::set_async(backend, stream, dst, value, bytes),
    )
}
