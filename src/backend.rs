//! Choosing, loading and calling the backend. The front knows a backend only
//! through its `xdal_backend_v1_t` table; the built-in fake backend is
//! reached through the same getter signature a plugin exports.
use crate::builtin_backends::{self, BuiltinBackend};
use crate::error::{err, Error, XResult};
use crate::objects::StreamObj;
use std::ffi::{c_int, CStr, CString};
use std::mem::{offset_of, size_of, MaybeUninit};
use std::sync::{Arc, OnceLock};
use xdal_abi::*;

/// The loaded backend: a private copy of its table (entries beyond the
/// backend's `struct_size` read as NULL) plus what the front caches.
pub(crate) struct Backend {
    pub table: xdal_backend_v1_t,
    pub name: CString,
    pub device_count: c_int,
    /// Whether the backend marks the threads running callers' host
    /// functions itself; if not, the front wraps each one to mark it.
    pub marks_host_functions: bool,
    pub priority_least: c_int,
    pub priority_greatest: c_int,
    /// Each device's properties, read once: launches are checked against them.
    properties: Vec<xdal_device_properties_t>,
    defaults: Vec<OnceLock<Arc<StreamObj>>>,
}

static BACKEND: OnceLock<Result<Backend, Error>> = OnceLock::new();

/// The backend, loaded on first use. A backend that cannot start gives
/// `XDAL_ERROR_BACKEND_UNAVAILABLE` (or `VERSION_MISMATCH`) on every call,
/// with the reason, and never takes the process down.
#[inline]
pub(crate) fn backend() -> XResult<&'static Backend> {
    match BACKEND.get() {
        Some(Ok(backend)) if !crate::fork::in_child() => Ok(backend),
        _ => backend_otherwise(),
    }
}

/// `backend` before the start, after a failed one, or in a fork child:
/// out of line, so that the started backend costs its caller one test.
#[cold]
#[inline(never)]
fn backend_otherwise() -> XResult<&'static Backend> {
    match BACKEND.get() {
        Some(Ok(backend)) if crate::fork::in_child() => Err(crate::fork::refusal(backend)),
        // Started since `backend` looked.
        Some(Ok(backend)) => Ok(backend),
        Some(Err(failed)) => Err(failed.clone()),
        None => load_once(),
    }
}

/// The backend if it started, whatever this process may still do with it
/// (for its name).
pub(crate) fn started_backend() -> Option<&'static Backend> {
    BACKEND.get()?.as_ref().ok()
}

thread_local! {
    /// Set while this thread loads the backend: a call into xdal from the
    /// backend's getter or start would wait for itself.
    static LOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Loads the backend once, whichever thread asks first; the others wait
/// for it. A call from inside the load (the backend's getter calling
/// `xdal_init`, say) is refused rather than left waiting on itself.
#[cold]
fn load_once() -> XResult<&'static Backend> {
    if LOADING.get() {
        return Err(err!(
            XDAL_ERROR_BACKEND_UNAVAILABLE,
            "xdal was called while this thread is starting the backend (from the backend's getter or start, \
             which must not call xdal functions): the call would wait for itself"
        ));
    }
    /// Clears `LOADING` however the load ends, a panic included.
    struct Loading;
    impl Drop for Loading {
        fn drop(&mut self) {
            LOADING.set(false);
        }
    }
    LOADING.set(true);
    let _loading = Loading;
    BACKEND.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Calls a table entry when the backend fills it, else evaluates
/// `$otherwise` (the generic code built on other entries, in
/// `crate::dispatch`). A failure carries the backend's message.
macro_rules! call_or {
    ($backend:expr, $entry:ident($($arg:expr),* $(,)?), $otherwise:expr) => {{
        let backend: &$crate::backend::Backend = $backend;
        match backend.table.$entry {
            // SAFETY: the entry comes from a table validated at load, and the
            // front has checked every argument as the entry's documentation
            // in xdal_backend.h says it does.
            Some(entry) => backend.check(unsafe { entry($($arg),*) }),
            None => $otherwise,
        }
    }};
}
pub(crate) use call_or;

/// Calls a table entry: a NULL entry is `XDAL_ERROR_NOT_SUPPORTED`.
macro_rules! call {
    ($backend:expr, $entry:ident($($arg:expr),* $(,)?)) => {{
        let backend: &$crate::backend::Backend = $backend;
        $crate::backend::call_or!(backend, $entry($($arg),*), Err(backend.not_supported(stringify!($entry))))
    }};
}
pub(crate) use call;

impl Backend {
    /// Turns an entry's raw status into a result with the backend's message.
    #[inline]
    pub fn check(&self, raw: xdal_status_raw) -> XResult<()> {
        if raw == xdal_status::XDAL_SUCCESS as xdal_status_raw {
            return Ok(());
        }
        self.failure(raw)
    }

    /// `check` of a failed entry: out of line, off every call's path.
    #[cold]
    #[inline(never)]
    fn failure(&self, raw: xdal_status_raw) -> XResult<()> {
        let Some(status) = xdal_status::from_raw(raw) else {
            return Err(err!(XDAL_ERROR_INTERNAL, "backend returned {raw}, which is not an xdal_status_t"));
        };
        let detail = self
            .table
            .last_error_message
            // SAFETY: a validated entry; it takes no arguments.
            .map(|message| unsafe { message() })
            .filter(|p| !p.is_null())
            // SAFETY: the backend returns a NUL-terminated string that stays
            // valid until its next call on this thread.
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("{} backend reported {}", self.name_str(), status.name()));
        Err(Error::new(status, detail))
    }

    pub fn not_supported(&self, entry: &str) -> Error {
        err!(XDAL_ERROR_NOT_SUPPORTED, "the {} backend does not implement {entry}", self.name_str())
    }

    pub fn name_str(&self) -> &str {
        self.name.to_str().unwrap_or("?")
    }

    /// Checks a device index.
    pub fn device(&self, device: c_int) -> XResult<DeviceIndex> {
        if device < 0 || device >= self.device_count {
            return Err(err!(
                XDAL_ERROR_INVALID_DEVICE,
                "device {device} does not exist ({} device(s): 0 to {})",
                self.device_count,
                self.device_count - 1
            ));
        }
        Ok(DeviceIndex(device))
    }

    /// The properties the backend reported for `device` at start.
    pub fn properties(&self, device: DeviceIndex) -> &xdal_device_properties_t {
        &self.properties[device.index()]
    }

    /// The default stream of `device` (checked), created on first use.
    pub fn default_stream(&'static self, device: c_int) -> XResult<&'static Arc<StreamObj>> {
        let device = self.device(device)?;
        let slot = &self.defaults[device.index()];
        if let Some(stream) = slot.get() {
            return Ok(stream);
        }
        let created = StreamObj::create(self, device, XDAL_STREAM_DEFAULT, self.priority_least)?;
        Ok(slot.get_or_init(|| created))
    }

    /// The default stream of `device` if it was ever used.
    pub fn existing_default_stream(&self, device: c_int) -> Option<&Arc<StreamObj>> {
        self.defaults.get(usize::try_from(device).ok()?)?.get()
    }
}

/// A device index that `Backend::device` checked: the only way to make one,
/// so the front's per-device tables can be indexed with it without another
/// check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceIndex(c_int);

impl DeviceIndex {
    /// The index as the ABI spells it.
    #[inline]
    pub fn get(self) -> c_int {
        self.0
    }

    /// The index into a per-device table.
    #[inline]
    pub fn index(self) -> usize {
        // `Backend::device` checked 0 <= index < device_count.
        #[allow(clippy::cast_sign_loss)]
        let index = self.0 as usize;
        index
    }
}

/// Whether a table fills one entry.
type HasEntry = fn(&xdal_backend_v1_t) -> bool;

/// Entries no fallback can replace: a table without one is refused.
const REQUIRED: &[(&str, HasEntry)] = &[
    ("device_get_count", |t| t.device_get_count.is_some()),
    ("device_get_properties", |t| t.device_get_properties.is_some()),
    ("mem_alloc", |t| t.mem_alloc.is_some()),
    ("mem_free", |t| t.mem_free.is_some()),
    ("mem_copy", |t| t.mem_copy.is_some()),
    ("stream_create", |t| t.stream_create.is_some()),
    ("stream_destroy", |t| t.stream_destroy.is_some()),
    ("stream_query", |t| t.stream_query.is_some()),
    ("stream_synchronize", |t| t.stream_synchronize.is_some()),
    ("launch_host_func", |t| t.launch_host_func.is_some()),
    ("event_create", |t| t.event_create.is_some()),
    ("event_destroy", |t| t.event_destroy.is_some()),
    ("event_record", |t| t.event_record.is_some()),
    ("event_query", |t| t.event_query.is_some()),
    ("event_synchronize", |t| t.event_synchronize.is_some()),
];

/// The names of the table entries every backend must fill, in the order
/// the front checks them: part of the ABI contract (a backend built
/// against an earlier minor must not be refused), which `xdal-abi check`
/// compares with each baseline's.
pub fn required_entries() -> impl Iterator<Item = &'static str> {
    REQUIRED.iter().map(|(name, _)| *name)
}

extern "C" {
    /// From src/shim/linked_backend.c: the getter of a backend linked into
    /// the process, or NULL.
    fn xdal_front_linked_backend_getter() -> xdal_backend_get_v1_fn;
}

/// Picks the backend: `XDAL_BACKEND` (a built-in name or a plugin path),
/// else a backend linked into the process (the weak default), else the
/// default built-in one.
fn load() -> Result<Backend, Error> {
    let builtin = |b: &BuiltinBackend| (b.name.to_string(), Some(b.getter), b.marks_host_functions, b.survives_fork);
    let requested = xdal_backend_support::env::var("XDAL_BACKEND").unwrap_or_default();
    // Backends from elsewhere neither mark their callbacks' threads nor are
    // known to survive fork().
    let (label, getter, marks_host_functions, survives_fork) = match requested.as_str() {
        // SAFETY: the shim only reads a weak symbol's address.
        "" => match unsafe { xdal_front_linked_backend_getter() } {
            Some(getter) => ("linked-in backend".to_string(), Some(getter), false, false),
            None => match builtin_backends::default_backend() {
                Some(b) => builtin(b),
                None => {
                    return Err(err!(
                        XDAL_ERROR_BACKEND_UNAVAILABLE,
                        "this library was built without built-in backends; set XDAL_BACKEND to the path of a \
                         backend plugin .so"
                    ))
                }
            },
        },
        path if path.contains('/') || path.ends_with(".so") => (path.to_string(), open_plugin(path)?, false, false),
        name => match builtin_backends::find(name) {
            Some(b) => builtin(b),
            None => {
                return Err(err!(
                    XDAL_ERROR_BACKEND_UNAVAILABLE,
                    "XDAL_BACKEND={name:?} names no backend built into this library (built in: {}); \
                     give a path to a plugin .so to load one",
                    builtin_backends::names()
                ))
            }
        },
    };
    let table = fetch_table(&label, getter)?;
    let backend = start(&label, table, marks_host_functions)?;
    if !survives_fork {
        crate::fork::watch();
    }
    Ok(backend)
}

/// Opens a plugin and finds its getter. The library is never closed: its
/// code must outlive every handle it made.
fn open_plugin(path: &str) -> Result<xdal_backend_get_v1_fn, Error> {
    let unavailable = |why: String| err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "cannot load backend plugin {path:?}: {why}");
    let c_path = CString::new(path).map_err(|_| unavailable("the path contains a NUL byte".into()))?;
    if let Some(why) = xdal_backend_support::user_path::not_a_library_file(path) {
        return Err(unavailable(why));
    }
    // SAFETY: dlopen with a valid C string; a failure is reported by NULL.
    let library = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if library.is_null() {
        return Err(unavailable(dl_error()));
    }
    // SAFETY: dlsym on a live handle with a valid C string.
    let symbol = unsafe { libc::dlsym(library, c"xdal_backend_get_v1".as_ptr()) };
    if symbol.is_null() {
        return Err(unavailable("it does not export xdal_backend_get_v1, so it is not an xdal backend".into()));
    }
    // SAFETY: a backend's xdal_backend_get_v1 has this signature by contract
    // (xdal_backend.h); function and data pointers have one size here.
    Ok(Some(unsafe {
        std::mem::transmute::<
            *mut libc::c_void,
            unsafe extern "C" fn(u32, u32, *mut *const xdal_backend_v1_t) -> xdal_status_raw,
        >(symbol)
    }))
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown dlopen error".into();
    }
    // SAFETY: non-NULL, NUL-terminated per dlerror's contract.
    unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
}

/// Calls the getter and copies the table it returns, reading no more than
/// the backend's `struct_size`.
fn fetch_table(label: &str, getter: xdal_backend_get_v1_fn) -> Result<xdal_backend_v1_t, Error> {
    let getter = getter.ok_or_else(|| err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "backend {label}: no getter"))?;
    let mut raw_table: *const xdal_backend_v1_t = std::ptr::null();
    // SAFETY: the getter has the documented signature; it writes one pointer.
    let status = unsafe { getter(XDAL_ABI_VERSION_MAJOR, XDAL_ABI_VERSION_MINOR, &mut raw_table) };
    if status != xdal_status::XDAL_SUCCESS as xdal_status_raw {
        let why = format!(
            "backend {label} refused to start: its getter returned {} for this library's ABI {}.{}",
            xdal_status::from_raw(status).map_or("an unknown status", |s| s.name()),
            XDAL_ABI_VERSION_MAJOR,
            XDAL_ABI_VERSION_MINOR
        );
        let version = xdal_status::from_raw(status) == Some(xdal_status::XDAL_ERROR_VERSION_MISMATCH);
        return Err(if version {
            err!(XDAL_ERROR_VERSION_MISMATCH, "{why}")
        } else {
            err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "{why}")
        });
    }
    if raw_table.is_null() {
        return Err(err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "backend {label}: the getter returned a NULL table"));
    }
    // SAFETY: the table starts with `size_t struct_size`, readable whatever
    // the backend's version.
    let size = unsafe { (*raw_table).struct_size };
    let header = offset_of!(xdal_backend_v1_t, name) + size_of::<*const i8>();
    if size < header {
        return Err(err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "backend {label}: table struct_size {size} is too small"));
    }
    let mut table = MaybeUninit::<xdal_backend_v1_t>::zeroed();
    // SAFETY: copies the bytes the backend declared, capped at the size this
    // front knows; the rest stays zero, i.e. NULL entries. All-zero bytes are
    // a valid table (NULL pointers, None entries).
    unsafe {
        std::ptr::copy_nonoverlapping(
            raw_table as *const u8,
            table.as_mut_ptr() as *mut u8,
            size.min(size_of::<xdal_backend_v1_t>()),
        );
        Ok(table.assume_init())
    }
}

/// Checks a table and asks the backend what the front caches.
fn start(label: &str, table: xdal_backend_v1_t, marks_host_functions: bool) -> Result<Backend, Error> {
    if table.abi_major != XDAL_ABI_VERSION_MAJOR {
        return Err(err!(
            XDAL_ERROR_VERSION_MISMATCH,
            "backend {label} implements ABI {}.{}, this library ABI {}.{}",
            table.abi_major,
            table.abi_minor,
            XDAL_ABI_VERSION_MAJOR,
            XDAL_ABI_VERSION_MINOR
        ));
    }
    if table.name.is_null() {
        return Err(err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "backend {label}: the table has no name"));
    }
    let missing: Vec<&str> = REQUIRED.iter().filter(|(_, present)| !present(&table)).map(|(n, _)| *n).collect();
    if !missing.is_empty() {
        return Err(err!(
            XDAL_ERROR_BACKEND_UNAVAILABLE,
            "backend {label} lacks required entries: {}",
            missing.join(", ")
        ));
    }
    // SAFETY: non-NULL, NUL-terminated and static per the table contract.
    let name = unsafe { CStr::from_ptr(table.name) }.to_owned();
    let mut backend = Backend {
        table,
        name,
        device_count: 0,
        marks_host_functions,
        priority_least: 0,
        priority_greatest: 0,
        properties: Vec::new(),
        defaults: Vec::new(),
    };
    let mut count: c_int = 0;
    call!(&backend, device_get_count(&mut count)).map_err(|e| unavailable_because(label, e))?;
    if count < 0 {
        return Err(err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "backend {label} reports {count} devices"));
    }
    // Consumers size per-device tables with XDAL_MAX_DEVICES: devices past
    // it stay invisible rather than overrun them.
    backend.device_count = count.min(XDAL_MAX_DEVICES);
    if count > 0 && backend.table.device_get_stream_priority_range.is_some() {
        let (mut least, mut greatest) = (0, 0);
        call!(&backend, device_get_stream_priority_range(0, &mut least, &mut greatest))
            .map_err(|e| unavailable_because(label, e))?;
        backend.priority_least = least;
        backend.priority_greatest = greatest;
    }
    for device in 0..backend.device_count {
        // SAFETY: all-zero bytes are a valid xdal_device_properties_t.
        let mut props: xdal_device_properties_t = unsafe { std::mem::zeroed() };
        props.struct_size = size_of::<xdal_device_properties_t>();
        call!(&backend, device_get_properties(device, &mut props)).map_err(|e| unavailable_because(label, e))?;
        backend.properties.push(props);
    }
    backend.defaults = (0..backend.device_count).map(|_| OnceLock::new()).collect();
    Ok(backend)
}

fn unavailable_because(label: &str, error: Error) -> Error {
    err!(XDAL_ERROR_BACKEND_UNAVAILABLE, "backend {label} failed while starting: {}", error.message)
}
