//! Thin helpers over the public C ABI, used as any consumer would use it:
//! a status check that carries the library's message, owners that free
//! what they hold, and the empty host function and kernel the launch
//! measurements enqueue.
use std::alloc::{alloc, dealloc, Layout};
use std::ffi::{c_void, CStr};
use std::ptr::null_mut;
use xdal::abi::*;
use xdal::*;

/// A failed xdal call (or a failed set-up step), in words.
pub type Res<T> = Result<T, String>;

/// Copy kinds, as the C ABI takes them.
pub const H2D: xdal_memcpy_kind_raw = xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_DEVICE as xdal_memcpy_kind_raw;
pub const D2H: xdal_memcpy_kind_raw = xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_HOST as xdal_memcpy_kind_raw;
pub const D2D: xdal_memcpy_kind_raw = xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_DEVICE as xdal_memcpy_kind_raw;

/// A 1x1x1 grid or block.
pub const ONE: xdal_dim3_t = xdal_dim3_t { x: 1, y: 1, z: 1 };

fn status_name(status: xdal_status_t) -> String {
    // SAFETY: xdal_status_string never returns NULL and its strings are static.
    unsafe { CStr::from_ptr(xdal_status_string(status as xdal_status_raw)) }.to_string_lossy().into_owned()
}

fn last_error() -> String {
    let mut buf = [0 as std::ffi::c_char; 1024];
    xdal_get_last_error_message(buf.as_mut_ptr(), buf.len(), null_mut());
    // SAFETY: xdal_get_last_error_message NUL-terminates the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

/// The name of the backend the library runs on (`xdal_backend_name`).
pub fn backend_name() -> &'static CStr {
    // SAFETY: xdal_backend_name never returns NULL; the string is static.
    unsafe { CStr::from_ptr(xdal_backend_name()) }
}

/// `Ok` when `status` is `XDAL_SUCCESS`, else the call's name, status and message.
#[inline]
pub fn check(status: xdal_status_t, what: &str) -> Res<()> {
    if status == xdal_status::XDAL_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} returned {}: {}", status_name(status), last_error()))
    }
}

/// Like `check`, but `XDAL_ERROR_NOT_READY` (a query that found work
/// pending) counts as success too.
#[inline]
pub fn check_query(status: xdal_status_t, what: &str) -> Res<()> {
    if status == xdal_status::XDAL_ERROR_NOT_READY {
        Ok(())
    } else {
        check(status, what)
    }
}

/// A backend-table status (a raw `int`): 0 is success.
#[inline]
pub fn check_raw(status: xdal_status_raw, what: &str) -> Res<()> {
    if status == xdal_status::XDAL_SUCCESS as xdal_status_raw {
        Ok(())
    } else {
        let name = xdal_status::from_raw(status).map_or("an unknown status", |s| s.name());
        Err(format!("{what} returned {name} ({status})"))
    }
}

/// Device memory from `xdal_malloc`, freed on drop.
pub struct DeviceMem {
    pub ptr: *mut c_void,
    pub size: usize,
}

impl DeviceMem {
    pub fn new(size: usize) -> Res<DeviceMem> {
        let mut ptr = null_mut();
        check(xdal_malloc(&mut ptr, size), "xdal_malloc")?;
        Ok(DeviceMem { ptr, size })
    }

    /// `size` bytes, every page written once (so no copy measures a page fault).
    pub fn touched(size: usize) -> Res<DeviceMem> {
        let mem = DeviceMem::new(size)?;
        check(xdal_memset(mem.ptr, 0x5a, size), "xdal_memset")?;
        Ok(mem)
    }

    /// The address `offset` bytes into the allocation.
    pub fn at(&self, offset: usize) -> *mut c_void {
        debug_assert!(offset < self.size);
        self.ptr.cast::<u8>().wrapping_add(offset).cast()
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        xdal_free(self.ptr);
    }
}

/// A stream from `xdal_stream_create`, destroyed on drop.
pub struct Stream(pub xdal_stream_t);

impl Stream {
    pub fn new() -> Res<Stream> {
        let mut stream = null_mut();
        check(xdal_stream_create(&mut stream, XDAL_STREAM_DEFAULT, 0), "xdal_stream_create")?;
        Ok(Stream(stream))
    }

    pub fn sync(&self) -> Res<()> {
        check(xdal_stream_synchronize(self.0), "xdal_stream_synchronize")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        xdal_stream_synchronize(self.0);
        xdal_stream_destroy(self.0);
    }
}

/// An event from `xdal_event_create`, destroyed on drop.
pub struct Event(pub xdal_event_t);

impl Event {
    pub fn new(flags: u32) -> Res<Event> {
        let mut event = null_mut();
        check(xdal_event_create(&mut event, flags), "xdal_event_create")?;
        Ok(Event(event))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        xdal_event_destroy(self.0);
    }
}

/// The empty host function of `xdal_launch_host_func` measurements.
pub unsafe extern "C" fn empty_host_fn(_user_data: *mut c_void) {}

/// The empty kernel: one call per block, nothing done.
pub unsafe extern "C" fn empty_kernel(
    _ctx: *const xdal_kernel_context_t,
    _args: *const *mut c_void,
) -> xdal_status_raw {
    xdal_status::XDAL_SUCCESS as xdal_status_raw
}

/// `empty_kernel` wrapped with `xdal_function_from_host`.
pub fn empty_function() -> Res<xdal_function_t> {
    let mut function = null_mut();
    check(xdal_function_from_host(&mut function, Some(empty_kernel)), "xdal_function_from_host")?;
    Ok(function)
}

/// One kernel argument: the bytes of `value`.
pub fn arg<T>(value: &T) -> xdal_kernel_arg_t {
    xdal_kernel_arg_t { value: (value as *const T).cast(), size: std::mem::size_of::<T>() }
}

/// Page-aligned host memory, every byte written (so every page is
/// resident), freed on drop. Page alignment keeps the copies' host side
/// as aligned as the device side, so that no figure measures a
/// misalignment of the bench's own buffers.
pub struct HostMem {
    ptr: *mut u8,
    layout: Layout,
}

impl HostMem {
    pub fn new(size: usize, fill: u8) -> Res<HostMem> {
        let layout = Layout::from_size_align(size.max(1), 4096).map_err(|e| e.to_string())?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc(layout) };
        if ptr.is_null() {
            return Err(format!("cannot allocate {size} bytes of host memory"));
        }
        // SAFETY: `ptr` is valid for `layout.size()` bytes.
        unsafe { ptr.write_bytes(fill, layout.size()) };
        Ok(HostMem { ptr, layout })
    }

    pub fn ptr(&self) -> *mut c_void {
        self.ptr.cast()
    }

    /// The memory as `f32`s (its size rounded down to whole ones).
    pub fn f32s(&mut self) -> &mut [f32] {
        // SAFETY: page-aligned, so aligned for f32; every byte is
        // initialised and any bit pattern is an f32; the borrow of `self`
        // keeps the memory alive and unaliased.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.layout.size() / 4) }
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}
