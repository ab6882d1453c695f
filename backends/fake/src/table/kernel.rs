//! Module, function and launch entries. Native module and function handles
//! are `Arc`s turned raw; a queued launch holds its own reference.
use super::{stream_ref, touch, write_out};
use crate::error::{entry, failure};
use crate::launch::Launch;
use crate::module::{FakeFunction, FakeModule};
use crate::stream::Op;
use std::ffi::{c_char, c_void, CStr};
use std::mem::ManuallyDrop;
use std::sync::{Arc, OnceLock};
use xdal_abi::*;

fn module_handle(module: FakeModule) -> xdal_backend_module_t {
    Arc::into_raw(Arc::new(module)) as xdal_backend_module_t
}

/// Borrows the function behind a live native handle.
///
/// # Safety
/// `handle` must come from this file and not be released (the front checks).
pub(super) unsafe fn function_ref(handle: xdal_backend_function_t) -> ManuallyDrop<Arc<FakeFunction>> {
    // SAFETY: per the contract above; ManuallyDrop leaves the count as is.
    ManuallyDrop::new(unsafe { Arc::from_raw(handle as *const FakeFunction) })
}

pub(super) unsafe extern "C" fn module_load(path: *const c_char, out: *mut xdal_backend_module_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes a non-NULL, NUL-terminated path.
        let module = FakeModule::load(unsafe { CStr::from_ptr(path) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, module_handle(module)) }
    })
}

pub(super) unsafe extern "C" fn module_load_data(
    image: *const c_void,
    bytes: usize,
    out: *mut xdal_backend_module_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes `bytes` readable bytes at `image`.
        let module = FakeModule::load_data(unsafe { std::slice::from_raw_parts(image as *const u8, bytes) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, module_handle(module)) }
    })
}

pub(super) unsafe extern "C" fn module_get_builtin(out: *mut xdal_backend_module_t) -> xdal_status_raw {
    static BUILTIN: OnceLock<Arc<FakeModule>> = OnceLock::new();
    entry(|| {
        let module = BUILTIN.get_or_init(|| Arc::new(FakeModule::Builtin)).clone();
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, Arc::into_raw(module) as xdal_backend_module_t) }
    })
}

pub(super) unsafe extern "C" fn module_unload(module: xdal_backend_module_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once; functions
        // of the module hold their own.
        drop(unsafe { Arc::from_raw(module as *const FakeModule) });
        Ok(())
    })
}

pub(super) unsafe extern "C" fn module_get_function(
    module: xdal_backend_module_t,
    name: *const c_char,
    out: *mut xdal_backend_function_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: a live module handle from this file (the front checks).
        let module = ManuallyDrop::new(unsafe { Arc::from_raw(module as *const FakeModule) });
        // SAFETY: the front passes a non-NULL, NUL-terminated name.
        let function = module.function(unsafe { CStr::from_ptr(name) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, Arc::into_raw(Arc::new(function)) as xdal_backend_function_t) }
    })
}

pub(super) unsafe extern "C" fn function_from_host(
    kernel: xdal_host_kernel_t,
    out: *mut xdal_backend_function_t,
) -> xdal_status_raw {
    entry(|| {
        let kernel = kernel.ok_or_else(|| failure!(XDAL_ERROR_NULL_POINTER, "kernel is NULL"))?;
        let function = Arc::new(FakeFunction::from_host(kernel));
        // SAFETY: the front passes a valid output pointer.
        unsafe { write_out(out, Arc::into_raw(function) as xdal_backend_function_t) }
    })
}

pub(super) unsafe extern "C" fn function_release(function: xdal_backend_function_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { Arc::from_raw(function as *const FakeFunction) });
        Ok(())
    })
}

pub(super) unsafe extern "C" fn launch_kernel(
    function: xdal_backend_function_t,
    grid: xdal_dim3_t,
    block: xdal_dim3_t,
    shared_mem_bytes: usize,
    stream: xdal_backend_stream_t,
    args: *const xdal_kernel_arg_t,
    num_args: usize,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: live handles (the front checks).
        let (function, stream) = unsafe { (function_ref(function), stream_ref(stream)) };
        let args = if num_args == 0 {
            &[][..]
        } else {
            // SAFETY: the front checked `args` is non-NULL with `num_args` entries.
            unsafe { std::slice::from_raw_parts(args, num_args) }
        };
        if let Some(expected) = function.arg_sizes {
            if !args.iter().map(|a| a.size).eq(expected.iter().copied()) {
                let given: Vec<usize> = args.iter().map(|a| a.size).collect();
                return Err(failure!(
                    XDAL_ERROR_INVALID_VALUE,
                    "{} takes {} argument(s) of {expected:?} bytes; the launch gave {} of {given:?}",
                    function.name,
                    expected.len(),
                    given.len()
                ));
            }
        }
        touch(stream.device)?;
        if let Err(fault) = crate::fake().faults.check(crate::faults::Op::Launch) {
            // Accepted, and failing when the stream reaches it, as a
            // kernel that fails does.
            stream.enqueue(crate::stream::timed(Op::Task(Box::new(move || Err(fault)))));
            return Ok(());
        }
        // SAFETY: the front checked every value is non-NULL; the caller
        // provides `size` readable bytes at each.
        let launch = unsafe { Launch::prepare(Arc::clone(&function), grid, block, shared_mem_bytes, args) };
        stream.enqueue(crate::stream::timed(Op::Kernel(launch)));
        Ok(())
    })
}
