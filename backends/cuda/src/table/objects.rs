//! The CUDA backend's streams, events, modules and functions behind the
//! table entries xdal-backend-support writes once for every backend whose
//! handles are `Arc`s turned raw.
use crate::error::{failure, CuResult, Failure};
use crate::event::Event;
use crate::module::{CuFunction, CuModule};
use crate::stream::Stream;
use std::ffi::{c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};
use xdal_abi::{xdal_dim3_t, xdal_host_fn_t, xdal_kernel_arg_t};
use xdal_backend_support::objects::Objects;

/// The CUDA backend, as the shared entries see it.
pub(crate) enum CuObjects {}

impl Objects for CuObjects {
    const NAME: &'static str = "CUDA";
    type Stream = Stream;
    type Event = Event;
    type Module = CuModule;
    type Function = CuFunction;

    fn stream_create(device: usize, priority: c_int) -> CuResult<Arc<Stream>> {
        Stream::create(device, priority)
    }

    fn stream_query(stream: &Arc<Stream>) -> CuResult<()> {
        stream.query()
    }

    fn stream_synchronize(stream: &Arc<Stream>) -> CuResult<()> {
        stream.synchronize()
    }

    fn stream_wait_event(stream: &Arc<Stream>, event: &Event) -> CuResult<()> {
        event.make_wait(stream)
    }

    fn launch_host_func(stream: &Arc<Stream>, func: xdal_host_fn_t, user_data: *mut c_void) -> CuResult<()> {
        crate::timing::around(stream, || stream.launch_host_func(func, user_data))
    }

    fn event_create(timing: bool) -> Event {
        Event::new(timing)
    }

    fn event_record(event: &Event, stream: &Arc<Stream>) -> CuResult<()> {
        event.record(stream)
    }

    fn event_query(event: &Event) -> CuResult<()> {
        event.query()
    }

    fn event_synchronize(event: &Event) -> CuResult<()> {
        event.synchronize()
    }

    fn event_elapsed_ms(start: &Event, end: &Event) -> CuResult<f32> {
        Event::elapsed_ms(start, end)
    }

    fn module_load(path: &CStr) -> CuResult<CuModule> {
        CuModule::load(path)
    }

    fn module_load_data(image: &[u8]) -> CuResult<CuModule> {
        CuModule::load_data(image)
    }

    fn module_builtin() -> Arc<CuModule> {
        static BUILTIN: OnceLock<Arc<CuModule>> = OnceLock::new();
        BUILTIN.get_or_init(|| Arc::new(CuModule::Builtin)).clone()
    }

    fn module_function(module: &CuModule, name: &CStr) -> CuResult<CuFunction> {
        module.function(name)
    }

    fn no_host_functions() -> Failure {
        failure!(
            XDAL_ERROR_NOT_SUPPORTED,
            "the CUDA backend runs no host code on the device: load the kernel as PTX, cubin or fatbin with \
             xdal_module_load or xdal_module_load_data"
        )
    }

    unsafe fn launch(
        function: &CuFunction,
        stream: &Arc<Stream>,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> CuResult<()> {
        // SAFETY: the caller's contract is `launch`'s.
        crate::timing::around(stream, || unsafe { function.launch(stream, grid, block, shared_mem_bytes, args) })
    }
}
