//! Module, function and launch entries. Native module and function handles
//! are `Arc`s turned raw.
use super::stream_ref;
use crate::error::{entry, failure};
use crate::module::{CuFunction, CuModule};
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, OnceLock};
use xdal_abi::*;
use xdal_backend_support::{arc_into_handle, arc_ref};

/// Writes a handle the caller receives.
///
/// # Safety
/// `out` is a valid output pointer (the front checks).
unsafe fn hand_out<T, H>(out: *mut *mut H, value: Arc<T>) {
    // SAFETY: per the contract.
    unsafe { out.write(arc_into_handle(value)) };
}

pub(super) unsafe extern "C" fn module_load(path: *const c_char, out: *mut xdal_backend_module_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes a non-NULL, NUL-terminated path.
        let module = CuModule::load(unsafe { CStr::from_ptr(path) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, Arc::new(module)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn module_load_data(
    image: *const c_void,
    bytes: usize,
    out: *mut xdal_backend_module_t,
) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front passes `bytes` readable bytes at `image`.
        let module = CuModule::load_data(unsafe { std::slice::from_raw_parts(image as *const u8, bytes) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, Arc::new(module)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn module_get_builtin(out: *mut xdal_backend_module_t) -> xdal_status_raw {
    static BUILTIN: OnceLock<Arc<CuModule>> = OnceLock::new();
    entry(|| {
        let module = BUILTIN.get_or_init(|| Arc::new(CuModule::Builtin)).clone();
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, module) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn module_unload(module: xdal_backend_module_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once; functions
        // hold their program themselves.
        drop(unsafe { xdal_backend_support::arc_from_handle::<CuModule, _>(module) });
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
        let module = unsafe { arc_ref::<CuModule, _>(module) };
        // SAFETY: the front passes a non-NULL, NUL-terminated name.
        let function = module.function(unsafe { CStr::from_ptr(name) })?;
        // SAFETY: the front passes a valid output pointer.
        unsafe { hand_out(out, Arc::new(function)) };
        Ok(())
    })
}

pub(super) unsafe extern "C" fn function_from_host(
    _kernel: xdal_host_kernel_t,
    _out: *mut xdal_backend_function_t,
) -> xdal_status_raw {
    entry(|| {
        Err(failure!(
            XDAL_ERROR_NOT_SUPPORTED,
            "the CUDA backend runs no host code on the device: load the kernel as PTX, cubin or fatbin with \
             xdal_module_load or xdal_module_load_data"
        ))
    })
}

pub(super) unsafe extern "C" fn function_release(function: xdal_backend_function_t) -> xdal_status_raw {
    entry(|| {
        // SAFETY: the front gives up its reference exactly once.
        drop(unsafe { xdal_backend_support::arc_from_handle::<CuFunction, _>(function) });
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
        let (function, stream) = unsafe { (arc_ref::<CuFunction, _>(function), stream_ref(stream)) };
        let args = if num_args == 0 {
            &[][..]
        } else {
            // SAFETY: the front checked `args` is non-NULL with `num_args` entries.
            unsafe { std::slice::from_raw_parts(args, num_args) }
        };
        // SAFETY: the front checked every value is non-NULL; the caller
        // provides `size` readable bytes at each.
        crate::timing::around(&stream, || unsafe { function.launch(&stream, grid, block, shared_mem_bytes, args) })
    })
}
