//! The table entries of streams, events, modules and functions, written
//! once for every backend whose native handles are `Arc`s turned raw (the
//! OpenCL and the CUDA backend). A backend implements [`Objects`] for a
//! marker type of its own and puts the entries of this module, instantiated
//! for that type, into its table (`stream_query::<Mine>`); what differs
//! between backends lives in the trait's functions. Each entry runs its body
//! inside the panic boundary ([`entry`](crate::entry)) and turns handles
//! into references the way the front's contract allows: it keeps each
//! handle alive for the duration of the call and gives each back exactly
//! once.
use crate::{arc_from_handle, arc_into_handle, arc_ref, entry, BackendResult, Failure};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;
use xdal_abi::*;

/// A backend's native objects and what the shared entries ask of them.
pub trait Objects: 'static {
    /// The backend's name in a caught panic's message ("OpenCL backend
    /// panicked: ...").
    const NAME: &'static str;
    type Stream: Send + Sync + 'static;
    type Event: Send + Sync + 'static;
    type Module: Send + Sync + 'static;
    type Function: Send + Sync + 'static;

    /// A new stream on `device` with `priority` (both checked by the front).
    fn stream_create(device: usize, priority: c_int) -> BackendResult<Arc<Self::Stream>>;
    fn stream_query(stream: &Arc<Self::Stream>) -> BackendResult<()>;
    fn stream_synchronize(stream: &Arc<Self::Stream>) -> BackendResult<()>;
    /// Makes `stream` wait for `event`'s last record.
    fn stream_wait_event(stream: &Arc<Self::Stream>, event: &Self::Event) -> BackendResult<()>;
    /// Runs `func(user_data)` in stream order.
    fn launch_host_func(stream: &Arc<Self::Stream>, func: xdal_host_fn_t, user_data: *mut c_void) -> BackendResult<()>;

    /// A new event; `timing`: it records times.
    fn event_create(timing: bool) -> Self::Event;
    fn event_record(event: &Self::Event, stream: &Arc<Self::Stream>) -> BackendResult<()>;
    fn event_query(event: &Self::Event) -> BackendResult<()>;
    fn event_synchronize(event: &Self::Event) -> BackendResult<()>;
    /// Milliseconds from `start`'s record to `end`'s.
    fn event_elapsed_ms(start: &Self::Event, end: &Self::Event) -> BackendResult<f32>;

    /// A module from the file at `path`.
    fn module_load(path: &CStr) -> BackendResult<Self::Module>;
    /// A module from an image in memory.
    fn module_load_data(image: &[u8]) -> BackendResult<Self::Module>;
    /// The module of the built-in kernels, one for the process.
    fn module_builtin() -> Arc<Self::Module>;
    /// The function called `name` in `module`.
    fn module_function(module: &Self::Module, name: &CStr) -> BackendResult<Self::Function>;
    /// Why `xdal_function_from_host` is refused here (a GPU-like backend
    /// runs no host code), saying what to do instead.
    fn no_host_functions() -> Failure;

    /// Enqueues `function` on `stream`.
    ///
    /// # Safety
    /// Every argument's `value` points to `size` readable bytes.
    unsafe fn launch(
        function: &Self::Function,
        stream: &Arc<Self::Stream>,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> BackendResult<()>;
}

/// Borrows the stream behind a live native handle made by `stream_create`.
///
/// # Safety
/// `handle` must be a live stream handle of backend `B` (the front checks
/// handles before every call and keeps them alive for its duration).
pub unsafe fn stream_ref<B: Objects>(handle: xdal_backend_stream_t) -> std::mem::ManuallyDrop<Arc<B::Stream>> {
    // SAFETY: per the contract above.
    unsafe { arc_ref(handle) }
}

/// Borrows the event behind a live native handle.
///
/// # Safety
/// `handle` must be a live event handle of backend `B`.
unsafe fn event_ref<'a, B: Objects>(handle: xdal_backend_event_t) -> &'a B::Event {
    // SAFETY: per the contract above, the Arc behind it is alive.
    unsafe { &*(handle as *const B::Event) }
}

/// Writes a new object's handle for the caller.
///
/// # Safety
/// `out` is a valid output pointer (the front checks).
unsafe fn hand_out<T, H>(out: *mut *mut H, object: Arc<T>) {
    // SAFETY: per the contract above.
    unsafe { out.write(arc_into_handle(object)) };
}

/// `stream_create`.
///
/// # Safety
/// The table entry's contract: the front's checked arguments.
pub unsafe extern "C" fn stream_create<B: Objects>(
    device: c_int,
    _flags: u32,
    priority: c_int,
    out: *mut xdal_backend_stream_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        let stream = B::stream_create(device as usize, priority)?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, stream) };
        Ok(())
    })
}

/// `stream_destroy`: pending work still completes.
///
/// # Safety
/// As for every entry: a live handle, given back once.
pub unsafe extern "C" fn stream_destroy<B: Objects>(stream: xdal_backend_stream_t) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { arc_from_handle::<B::Stream, _>(stream) });
        Ok(())
    })
}

/// `stream_query`.
///
/// # Safety
/// As for every entry: a live handle.
pub unsafe extern "C" fn stream_query<B: Objects>(stream: xdal_backend_stream_t) -> xdal_status_raw {
    // SAFETY: the front passes a live stream.
    entry(B::NAME, || B::stream_query(&*unsafe { stream_ref::<B>(stream) }))
}

/// `stream_synchronize`.
///
/// # Safety
/// As for every entry: a live handle.
pub unsafe extern "C" fn stream_synchronize<B: Objects>(stream: xdal_backend_stream_t) -> xdal_status_raw {
    // SAFETY: the front passes a live stream.
    entry(B::NAME, || B::stream_synchronize(&*unsafe { stream_ref::<B>(stream) }))
}

/// `stream_wait_event`.
///
/// # Safety
/// As for every entry: live handles.
pub unsafe extern "C" fn stream_wait_event<B: Objects>(
    stream: xdal_backend_stream_t,
    event: xdal_backend_event_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front passes live handles.
        let (stream, event) = unsafe { (stream_ref::<B>(stream), event_ref::<B>(event)) };
        B::stream_wait_event(&stream, event)
    })
}

/// `launch_host_func`.
///
/// # Safety
/// As for every entry: a live handle; the caller keeps `user_data` valid
/// until the function has run.
pub unsafe extern "C" fn launch_host_func<B: Objects>(
    stream: xdal_backend_stream_t,
    func: xdal_host_fn_t,
    user_data: *mut c_void,
) -> xdal_status_raw {
    // SAFETY: the front passes a live stream.
    entry(B::NAME, || B::launch_host_func(&*unsafe { stream_ref::<B>(stream) }, func, user_data))
}

/// `event_create`.
///
/// # Safety
/// As for every entry: a valid output pointer.
pub unsafe extern "C" fn event_create<B: Objects>(
    _device: c_int,
    flags: u32,
    out: *mut xdal_backend_event_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        let event = Arc::new(B::event_create(flags & XDAL_EVENT_DISABLE_TIMING == 0));
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, event) };
        Ok(())
    })
}

/// `event_destroy`: a pending record still completes.
///
/// # Safety
/// As for every entry: a live handle, given back once.
pub unsafe extern "C" fn event_destroy<B: Objects>(event: xdal_backend_event_t) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { arc_from_handle::<B::Event, _>(event) });
        Ok(())
    })
}

/// `event_record`.
///
/// # Safety
/// As for every entry: live handles.
pub unsafe extern "C" fn event_record<B: Objects>(
    event: xdal_backend_event_t,
    stream: xdal_backend_stream_t,
) -> xdal_status_raw {
    // SAFETY: the front passes live handles.
    entry(B::NAME, || unsafe { B::event_record(event_ref::<B>(event), &stream_ref::<B>(stream)) })
}

/// `event_query`.
///
/// # Safety
/// As for every entry: a live handle.
pub unsafe extern "C" fn event_query<B: Objects>(event: xdal_backend_event_t) -> xdal_status_raw {
    // SAFETY: the front passes a live event.
    entry(B::NAME, || B::event_query(unsafe { event_ref::<B>(event) }))
}

/// `event_synchronize`.
///
/// # Safety
/// As for every entry: a live handle.
pub unsafe extern "C" fn event_synchronize<B: Objects>(event: xdal_backend_event_t) -> xdal_status_raw {
    // SAFETY: the front passes a live event.
    entry(B::NAME, || B::event_synchronize(unsafe { event_ref::<B>(event) }))
}

/// `event_elapsed_time`.
///
/// # Safety
/// As for every entry: live handles and a valid output pointer.
pub unsafe extern "C" fn event_elapsed_time<B: Objects>(
    ms: *mut f32,
    start: xdal_backend_event_t,
    end: xdal_backend_event_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front passes live events.
        let value = B::event_elapsed_ms(unsafe { event_ref::<B>(start) }, unsafe { event_ref::<B>(end) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { ms.write(value) };
        Ok(())
    })
}

/// `module_load`.
///
/// # Safety
/// As for every entry: a NUL-terminated path and a valid output pointer.
pub unsafe extern "C" fn module_load<B: Objects>(
    path: *const c_char,
    out: *mut xdal_backend_module_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front passes a non-NULL, NUL-terminated path.
        let module = B::module_load(unsafe { CStr::from_ptr(path) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, Arc::new(module)) };
        Ok(())
    })
}

/// `module_load_data`.
///
/// # Safety
/// As for every entry: `bytes` readable bytes at `image`, a valid output
/// pointer.
pub unsafe extern "C" fn module_load_data<B: Objects>(
    image: *const c_void,
    bytes: usize,
    out: *mut xdal_backend_module_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front passes `bytes` readable bytes at `image`.
        let module = B::module_load_data(unsafe { std::slice::from_raw_parts(image.cast::<u8>(), bytes) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, Arc::new(module)) };
        Ok(())
    })
}

/// `module_get_builtin`.
///
/// # Safety
/// As for every entry: a valid output pointer.
pub unsafe extern "C" fn module_get_builtin<B: Objects>(out: *mut xdal_backend_module_t) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, B::module_builtin()) };
        Ok(())
    })
}

/// `module_unload`: functions keep what they need of the module.
///
/// # Safety
/// As for every entry: a live handle, given back once.
pub unsafe extern "C" fn module_unload<B: Objects>(module: xdal_backend_module_t) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { arc_from_handle::<B::Module, _>(module) });
        Ok(())
    })
}

/// `module_get_function`.
///
/// # Safety
/// As for every entry: a live handle, a NUL-terminated name, a valid
/// output pointer.
pub unsafe extern "C" fn module_get_function<B: Objects>(
    module: xdal_backend_module_t,
    name: *const c_char,
    out: *mut xdal_backend_function_t,
) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: a live module handle (the front checks).
        let module = unsafe { arc_ref::<B::Module, _>(module) };
        // SAFETY: the front passes a non-NULL, NUL-terminated name.
        let function = B::module_function(&module, unsafe { CStr::from_ptr(name) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, Arc::new(function)) };
        Ok(())
    })
}

/// `function_from_host`: refused, with the backend's reason.
///
/// # Safety
/// None beyond the entry's signature: nothing is read or written.
pub unsafe extern "C" fn function_from_host<B: Objects>(
    _kernel: xdal_host_kernel_t,
    _out: *mut xdal_backend_function_t,
) -> xdal_status_raw {
    entry(B::NAME, || Err(B::no_host_functions()))
}

/// `function_release`.
///
/// # Safety
/// As for every entry: a live handle, given back once.
pub unsafe extern "C" fn function_release<B: Objects>(function: xdal_backend_function_t) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { arc_from_handle::<B::Function, _>(function) });
        Ok(())
    })
}

/// `launch_kernel`.
///
/// # Safety
/// As for every entry: live handles; `args` holds `num_args` entries whose
/// values are readable for their sizes (the front checks).
pub unsafe extern "C" fn launch_kernel<B: Objects>(
    function: xdal_backend_function_t,
    grid: xdal_dim3_t,
    block: xdal_dim3_t,
    shared_mem_bytes: usize,
    stream: xdal_backend_stream_t,
    args: *const xdal_kernel_arg_t,
    num_args: usize,
) -> xdal_status_raw {
    entry(B::NAME, || {
        // SAFETY: live handles (the front checks).
        let (function, stream) = unsafe { (arc_ref::<B::Function, _>(function), stream_ref::<B>(stream)) };
        let args = if num_args == 0 {
            &[][..]
        } else {
            // SAFETY: the front checked `args` is non-NULL with `num_args` entries.
            unsafe { std::slice::from_raw_parts(args, num_args) }
        };
        // SAFETY: the front checked every value is non-NULL; the caller
        // provides `size` readable bytes at each.
        unsafe { B::launch(&function, &stream, grid, block, shared_mem_bytes, args) }
    })
}
