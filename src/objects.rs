//! The front's stream and event objects: a backend handle plus what the
//! front must answer without asking the backend. C sees them only through
//! handle tables; the backend object is destroyed when the last reference
//! goes, so a call racing with a destroy never reaches a freed backend
//! object.
use crate::backend::{backend, call, Backend, DeviceIndex};
use crate::builtin_args::BuiltinArgs;
use crate::error::{bail, err, Error, XResult};
use crate::graph::Capture;
use crate::handles::{HandleTable, Ref};
use crate::lock::IgnorePoison;
use crate::threads::current_device;
use std::collections::HashMap;
use std::ffi::{c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, Weak};
use xdal_abi::*;

pub(crate) struct StreamObj {
    pub native: xdal_backend_stream_t,
    /// Stable and unique in the process, never 0: activities name their
    /// stream by it.
    pub id: u64,
    pub device: DeviceIndex,
    pub priority: c_int,
    /// The first failure of work the front enqueued itself (the fallbacks
    /// for async entries a backend leaves empty): sticky, like the
    /// backend's own stream errors.
    pub fallback_error: Mutex<Option<Error>>,
    /// Whether the stream takes part in a capture (since 1.2): checked on
    /// every enqueue, so one load when it does not.
    pub capturing: AtomicBool,
    /// The capture, while `capturing`.
    pub capture: Mutex<Option<Arc<Capture>>>,
    /// Set (under `capture`'s lock) when the handle is destroyed: no
    /// capture may begin on the stream or take it in after that, since
    /// nothing could end it.
    pub closed: AtomicBool,
    backend: &'static Backend,
}

// SAFETY: `native` is an opaque token that backends must accept from any
// thread (the table contract); the other fields are plain data.
unsafe impl Send for StreamObj {}
// SAFETY: as above; nothing is mutated after creation.
unsafe impl Sync for StreamObj {}

impl StreamObj {
    /// The sticky error of front-enqueued work, if any.
    pub fn fallback_error(&self) -> XResult<()> {
        match &*self.fallback_error.lock().ignore_poison() {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    pub fn create(
        backend: &'static Backend,
        device: DeviceIndex,
        flags: u32,
        priority: c_int,
    ) -> XResult<Arc<StreamObj>> {
        let mut native: xdal_backend_stream_t = std::ptr::null_mut();
        call!(backend, stream_create(device.get(), flags, priority, &mut native))?;
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Ok(Arc::new(StreamObj {
            native,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            device,
            priority,
            fallback_error: Mutex::new(None),
            capturing: AtomicBool::new(false),
            capture: Mutex::new(None),
            closed: AtomicBool::new(false),
            backend,
        }))
    }
}

impl Drop for StreamObj {
    fn drop(&mut self) {
        // Nothing to report to: the handle is gone. A failure here would be
        // a backend bug that leaks one stream.
        let _ = call!(self.backend, stream_destroy(self.native));
    }
}

pub(crate) struct EventObj {
    pub native: xdal_backend_event_t,
    pub flags: u32,
    /// For backends without `event_elapsed_time`: the host time (ns + 1; 0
    /// while pending) at which the stream reached the latest record.
    pub stamp: Mutex<Option<Arc<AtomicU64>>>,
    /// Since 1.2: the id of the capture the event was last recorded in (0:
    /// none), checked by every query and wait.
    pub capture_id: AtomicU64,
    /// That capture and the stream's frontier there.
    pub captured: Mutex<Option<(Weak<Capture>, Vec<usize>)>>,
    backend: &'static Backend,
}

// SAFETY: as for StreamObj.
unsafe impl Send for EventObj {}
// SAFETY: as for StreamObj.
unsafe impl Sync for EventObj {}

impl EventObj {
    pub fn create(backend: &'static Backend, device: DeviceIndex, flags: u32) -> XResult<Arc<EventObj>> {
        let mut native: xdal_backend_event_t = std::ptr::null_mut();
        call!(backend, event_create(device.get(), flags, &mut native))?;
        Ok(Arc::new(EventObj {
            native,
            flags,
            stamp: Mutex::new(None),
            capture_id: AtomicU64::new(0),
            captured: Mutex::new(None),
            backend,
        }))
    }
}

impl Drop for EventObj {
    fn drop(&mut self) {
        let _ = call!(self.backend, event_destroy(self.native));
    }
}

pub(crate) static STREAMS: HandleTable<StreamObj> = HandleTable::tracked(0xA151, "stream");
pub(crate) static EVENTS: HandleTable<EventObj> = HandleTable::tracked(0xA1E7, "event");

/// A stream a call named, borrowed for the call: from the handle table, or
/// a device's default stream (which lives as long as the process).
pub(crate) enum StreamRef {
    Handle(Ref<StreamObj>),
    Default(&'static Arc<StreamObj>),
}

impl std::ops::Deref for StreamRef {
    type Target = Arc<StreamObj>;
    fn deref(&self) -> &Arc<StreamObj> {
        match self {
            StreamRef::Handle(object) => object,
            StreamRef::Default(object) => object,
        }
    }
}

/// Top 16 bits of a handle that names a device's default stream, the
/// device index in the low bits (`xdal_device_get_default_stream`). Not
/// the tag of any handle table, so no table handle ever looks like one;
/// there is nothing to look up or free, since default streams live in
/// the backend state and are never destroyed.
const DEFAULT_STREAM_TAG: usize = 0xA15D << 48;
const DEFAULT_STREAM_DEVICE_MASK: usize = (1 << 48) - 1;

/// The handle that names `device`'s default stream; the same value every
/// time.
pub(crate) fn default_stream_handle(device: DeviceIndex) -> xdal_stream_t {
    (DEFAULT_STREAM_TAG | device.index()) as xdal_stream_t
}

/// The device whose default stream `handle` names, if it is such a handle
/// for a device of `backend`.
pub(crate) fn default_stream_device(backend: &Backend, handle: xdal_stream_t) -> Option<c_int> {
    let handle = handle as usize;
    if handle & !DEFAULT_STREAM_DEVICE_MASK != DEFAULT_STREAM_TAG {
        return None;
    }
    c_int::try_from(handle & DEFAULT_STREAM_DEVICE_MASK).ok().filter(|d| backend.device(*d).is_ok())
}

/// The stream a caller named: NULL is the current device's default stream,
/// a handle from `xdal_device_get_default_stream` that device's.
#[inline]
pub(crate) fn stream(handle: xdal_stream_t) -> XResult<StreamRef> {
    match STREAMS.get(handle as usize) {
        Some(stream) => Ok(StreamRef::Handle(stream)),
        None => not_a_table_stream(handle),
    }
}

/// The rest of `stream`: NULL or a default-stream handle (which
/// integrations such as torch_xdal pass on every default-stream call, so
/// it is not cold), or no stream at all. Out of line, to keep the table
/// lookup's path short.
#[inline(never)]
fn not_a_table_stream(handle: xdal_stream_t) -> XResult<StreamRef> {
    let backend = backend()?;
    if handle.is_null() {
        return backend.default_stream(current_device()).map(StreamRef::Default);
    }
    match default_stream_device(backend, handle) {
        Some(device) => backend.default_stream(device).map(StreamRef::Default),
        None => {
            Err(err!(XDAL_ERROR_INVALID_HANDLE, "{handle:p} is not a live stream (destroyed, or not a stream handle)"))
        }
    }
}

/// The event a caller named.
#[inline]
pub(crate) fn event(handle: xdal_event_t) -> XResult<Ref<EventObj>> {
    if handle.is_null() {
        bail!(XDAL_ERROR_INVALID_HANDLE, "the event handle is NULL");
    }
    EVENTS.get(handle as usize).ok_or_else(|| {
        err!(XDAL_ERROR_INVALID_HANDLE, "{handle:p} is not a live event (destroyed, or not an event handle)")
    })
}

/// A loaded module. Its functions are cached by name, so asking twice gives
/// one handle, and unloading invalidates them all.
pub(crate) struct ModuleObj {
    pub native: xdal_backend_module_t,
    /// The module of built-in kernels (`xdal_module_get_builtin`), whose
    /// arguments the front knows how to check.
    builtin: bool,
    functions: Mutex<HashMap<CString, usize>>,
    backend: &'static Backend,
}

// SAFETY: as for StreamObj; the function cache is behind a mutex.
unsafe impl Send for ModuleObj {}
// SAFETY: as above.
unsafe impl Sync for ModuleObj {}

impl ModuleObj {
    pub fn new(backend: &'static Backend, native: xdal_backend_module_t, builtin: bool) -> Arc<ModuleObj> {
        Arc::new(ModuleObj { native, builtin, functions: Mutex::new(HashMap::new()), backend })
    }

    /// The handle of the function `name`, made on first request.
    pub fn function(&self, name: &CStr) -> XResult<usize> {
        let mut functions = self.functions.lock().ignore_poison();
        if let Some(&handle) = functions.get(name) {
            return Ok(handle);
        }
        let mut native: xdal_backend_function_t = std::ptr::null_mut();
        call!(self.backend, module_get_function(self.native, name.as_ptr(), &mut native))?;
        let builtin = if self.builtin { BuiltinArgs::of(&name.to_string_lossy()) } else { None };
        let function = Arc::new(FunctionObj { native, builtin, name: name.to_owned(), backend: self.backend });
        let handle = insert_handle(&FUNCTIONS, function, "functions")?;
        functions.insert(name.to_owned(), handle);
        Ok(handle)
    }

    /// Invalidates every function handle taken from this module.
    pub fn forget_functions(&self) {
        let functions = std::mem::take(&mut *self.functions.lock().ignore_poison());
        for handle in functions.into_values() {
            FUNCTIONS.remove(handle);
        }
    }
}

impl Drop for ModuleObj {
    fn drop(&mut self) {
        let _ = call!(self.backend, module_unload(self.native));
    }
}

/// A launchable kernel.
pub(crate) struct FunctionObj {
    pub native: xdal_backend_function_t,
    /// For a built-in kernel, its signature: launches are checked with it.
    pub builtin: Option<BuiltinArgs>,
    /// Its name in its module; "" for a host function.
    name: CString,
    backend: &'static Backend,
}

// SAFETY: as for StreamObj.
unsafe impl Send for FunctionObj {}
// SAFETY: as for StreamObj.
unsafe impl Sync for FunctionObj {}

impl FunctionObj {
    pub fn new(backend: &'static Backend, native: xdal_backend_function_t) -> Arc<FunctionObj> {
        Arc::new(FunctionObj { native, builtin: None, name: CString::default(), backend })
    }

    /// The kernel's name, as profiles and graph dumps show it.
    pub fn name(&self) -> &str {
        self.name_cstr().to_str().unwrap_or("(a kernel)")
    }

    /// `name` for C.
    pub fn name_cstr(&self) -> &CStr {
        if self.name.is_empty() {
            c"(host kernel)"
        } else {
            &self.name
        }
    }
}

impl Drop for FunctionObj {
    fn drop(&mut self) {
        let _ = call!(self.backend, function_release(self.native));
    }
}

pub(crate) static MODULES: HandleTable<ModuleObj> = HandleTable::tracked(0xA1D0, "module");
pub(crate) static FUNCTIONS: HandleTable<FunctionObj> = HandleTable::new(0xA1F0);

/// Stores an object in a handle table; a full table is out of memory.
pub(crate) fn insert_handle<T>(table: &HandleTable<T>, value: Arc<T>, what: &str) -> XResult<usize> {
    table.insert(value).ok_or_else(|| err!(XDAL_ERROR_OUT_OF_MEMORY, "too many live {what}"))
}

/// The module a caller named.
pub(crate) fn module(handle: xdal_module_t) -> XResult<Ref<ModuleObj>> {
    MODULES.get(handle as usize).ok_or_else(|| {
        err!(XDAL_ERROR_INVALID_HANDLE, "{handle:p} is not a loaded module (unloaded, or not a module handle)")
    })
}

/// The function a caller named.
#[inline]
pub(crate) fn function(handle: xdal_function_t) -> XResult<Ref<FunctionObj>> {
    FUNCTIONS.get(handle as usize).ok_or_else(|| {
        err!(
            XDAL_ERROR_INVALID_HANDLE,
            "{handle:p} is not a live function (its module was unloaded, or not a function handle)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_stream_handles_name_one_device_each_and_nothing_else() {
        let backend = backend().expect("the fake backend starts");
        assert!(backend.device_count >= 1);
        for raw in 0..backend.device_count {
            let device = backend.device(raw).unwrap();
            let handle = default_stream_handle(device);
            assert!(!handle.is_null());
            assert_eq!(handle, default_stream_handle(device), "the same value every time");
            assert_eq!(default_stream_device(backend, handle), Some(raw));
            let named = stream(handle).expect("a default-stream handle resolves");
            assert!(Arc::ptr_eq(&named, backend.default_stream(raw).unwrap()), "the device's default stream");
            assert_eq!(named.device, device);
        }
        // A device the backend does not have, garbage near the tag, NULL.
        let beyond = (DEFAULT_STREAM_TAG | usize::try_from(backend.device_count).unwrap()) as xdal_stream_t;
        assert_eq!(default_stream_device(backend, beyond), None);
        assert!(stream(beyond).is_err_and(|e| e.status == xdal_status::XDAL_ERROR_INVALID_HANDLE));
        let stray_bits = (DEFAULT_STREAM_TAG | 1 << 40) as xdal_stream_t;
        assert_eq!(default_stream_device(backend, stray_bits), None);
        assert_eq!(default_stream_device(backend, std::ptr::null_mut()), None);
        assert_eq!(default_stream_device(backend, usize::MAX as xdal_stream_t), None);

        // No handle of a table is taken for one, whatever its slot.
        for tag in [0xA151, 0xA1E7, 0xA1D0, 0xA1F0] {
            let table: HandleTable<u8> = HandleTable::new(tag);
            for _ in 0..4 {
                let handle = table.insert(Arc::new(0)).unwrap() as xdal_stream_t;
                assert_eq!(default_stream_device(backend, handle), None, "tag {tag:#x}");
            }
        }
        let live = StreamObj::create(backend, backend.device(0).unwrap(), XDAL_STREAM_DEFAULT, backend.priority_least)
            .unwrap();
        let handle = insert_handle(&STREAMS, live, "streams").unwrap() as xdal_stream_t;
        assert_eq!(default_stream_device(backend, handle), None);
        assert!(STREAMS.remove(handle as usize).is_some());
    }
}
