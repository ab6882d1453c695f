//! The OpenCL backend's streams, events, modules and functions behind the
//! table entries xdal-backend-support writes once for every backend whose
//! handles are `Arc`s turned raw.
use crate::error::{failure, ClResult, Failure};
use crate::event::Event;
use crate::module::{ClFunction, ClModule};
use crate::stream::Stream;
use std::ffi::{c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};
use xdal_abi::{xdal_dim3_t, xdal_host_fn_t, xdal_kernel_arg_t};
use xdal_backend_support::objects::Objects;

/// The OpenCL backend, as the shared entries see it.
pub(crate) enum ClObjects {}

impl Objects for ClObjects {
    const NAME: &'static str = "OpenCL";
    type Stream = Stream;
    type Event = Event;
    type Module = ClModule;
    type Function = ClFunction;

    fn stream_create(device: usize, priority: c_int) -> ClResult<Arc<Stream>> {
        Stream::create(device, priority)
    }

    fn stream_query(stream: &Arc<Stream>) -> ClResult<()> {
        stream.query()
    }

    fn stream_synchronize(stream: &Arc<Stream>) -> ClResult<()> {
        stream.synchronize()
    }

    fn stream_wait_event(stream: &Arc<Stream>, event: &Event) -> ClResult<()> {
        event.make_wait(stream)
    }

    fn launch_host_func(stream: &Arc<Stream>, func: xdal_host_fn_t, user_data: *mut c_void) -> ClResult<()> {
        stream.launch_host_func(func, user_data)
    }

    fn event_create(timing: bool) -> Event {
        Event::new(timing)
    }

    fn event_record(event: &Event, stream: &Arc<Stream>) -> ClResult<()> {
        event.record(stream)
    }

    fn event_query(event: &Event) -> ClResult<()> {
        event.query()
    }

    fn event_synchronize(event: &Event) -> ClResult<()> {
        event.synchronize()
    }

    fn event_elapsed_ms(start: &Event, end: &Event) -> ClResult<f32> {
        Event::elapsed_ms(start, end)
    }

    fn module_load(path: &CStr) -> ClResult<ClModule> {
        ClModule::load(path)
    }

    fn module_load_data(image: &[u8]) -> ClResult<ClModule> {
        ClModule::load_data(image)
    }

    fn module_builtin() -> Arc<ClModule> {
        static BUILTIN: OnceLock<Arc<ClModule>> = OnceLock::new();
        BUILTIN.get_or_init(|| Arc::new(ClModule::Builtin)).clone()
    }

    fn module_function(module: &ClModule, name: &CStr) -> ClResult<ClFunction> {
        module.function(name)
    }

    fn no_host_functions() -> Failure {
        failure!(
            XDAL_ERROR_NOT_SUPPORTED,
            "the OpenCL backend runs no host code: load the kernel as OpenCL C with xdal_module_load_data"
        )
    }

    unsafe fn launch(
        function: &ClFunction,
        stream: &Arc<Stream>,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> ClResult<()> {
        // SAFETY: the caller's contract is `launch`'s.
        unsafe { function.launch(stream, grid, block, shared_mem_bytes, args) }
    }
}
