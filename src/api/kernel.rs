//! Kernels: modules, functions and launches.
use crate::api::copy::classify;
use crate::backend::{backend, call, Backend};
use crate::builtin_args::check_reaches;
use crate::error::{bail, boundary, err, require, Error, Out, XResult};
use crate::graph::node::{KernelNode, Op};
use crate::lock::IgnorePoison;
use crate::objects::{insert_handle, FunctionObj, ModuleObj, StreamObj, FUNCTIONS, MODULES};
use crate::registry::REGISTRY;
use crate::trace::activity::{self, Info};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;
use std::sync::Mutex;
use xdal_abi::*;

fn publish_module(
    backend: &'static Backend,
    native: xdal_backend_module_t,
    builtin: bool,
    out: Out<xdal_module_t>,
) -> XResult<()> {
    let handle = insert_handle(&MODULES, ModuleObj::new(backend, native, builtin), "modules")?;
    out.write(handle as xdal_module_t);
    Ok(())
}

/// Loads a module from a file: on the fake backend a host shared library
/// whose kernels have the `xdal_host_kernel_t` signature (see
/// docs/kernels.md); on a GPU backend the device's binary format.
/// `XDAL_ERROR_NOT_FOUND` if the file does not exist,
/// `XDAL_ERROR_INVALID_VALUE` if it is not a module, or not a regular file
/// (a directory, a FIFO, a device: refused before it is opened).
#[no_mangle]
pub extern "C" fn xdal_module_load(module: *mut xdal_module_t, path: *const c_char) -> xdal_status_t {
    boundary(c"xdal_module_load", || {
        let out = Out::new(module, "module")?;
        require(path, "path")?;
        let backend = backend()?;
        if backend.table.module_load.is_some() {
            check_module_file(path)?;
        }
        let mut native = std::ptr::null_mut();
        call!(backend, module_load(path, &mut native))?;
        publish_module(backend, native, false, out)
    })
}

/// A module path must name a regular file, or a link to one: opening a
/// FIFO waits for a writer, and reading a device such as `/dev/zero` never
/// ends, in any backend's loader.
fn check_module_file(path: *const c_char) -> XResult<()> {
    // SAFETY: non-NULL (checked by the caller) and NUL-terminated, as the
    // contract asks of the path.
    let path = unsafe { CStr::from_ptr(path) };
    let shown = path.to_string_lossy();
    match std::fs::metadata(xdal_backend_support::user_path::from_c(path)) {
        Ok(meta) => match xdal_backend_support::user_path::not_regular(&meta) {
            None => Ok(()),
            Some(kind) => bail!(XDAL_ERROR_INVALID_VALUE, "module file {shown:?} is {kind}, not a regular file"),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(XDAL_ERROR_NOT_FOUND, "module file {shown:?} does not exist")
        }
        Err(e) => bail!(XDAL_ERROR_INVALID_VALUE, "module file {shown:?} cannot be read: {e}"),
    }
}

/// Loads a module from `bytes` (> 0) bytes of memory holding what a module
/// file holds.
#[no_mangle]
pub extern "C" fn xdal_module_load_data(
    module: *mut xdal_module_t,
    image: *const c_void,
    bytes: usize,
) -> xdal_status_t {
    boundary(c"xdal_module_load_data", || {
        let out = Out::new(module, "module")?;
        require(image, "image")?;
        if bytes == 0 {
            bail!(XDAL_ERROR_INVALID_VALUE, "bytes is 0");
        }
        let backend = backend()?;
        let mut native = std::ptr::null_mut();
        call!(backend, module_load_data(image, bytes, &mut native))?;
        publish_module(backend, native, false, out)
    })
}

/// Writes the module of the backend's built-in kernels: since 1.0
/// `fill_<t>`, `cast_<s>_<d>`, `add_<t>`, `mul_<t>`, `sum_<t>`,
/// `matmul_<t>`; since 1.1 `cast_trunc_<s>_<d>`, `copy_strided_<t>`,
/// `cast_strided_<s>_<d>`, `cast_strided_trunc_<s>_<d>`, `fill_strided_<t>`,
/// `axpby_<t>`, `sum_dim_<t>` (docs/kernels.md gives their arguments). Each
/// call gives a new handle; unload it when done.
#[no_mangle]
pub extern "C" fn xdal_module_get_builtin(module: *mut xdal_module_t) -> xdal_status_t {
    boundary(c"xdal_module_get_builtin", || {
        let out = Out::new(module, "module")?;
        let backend = backend()?;
        let mut native = std::ptr::null_mut();
        call!(backend, module_get_builtin(&mut native))?;
        publish_module(backend, native, true, out)
    })
}

/// Unloads a module: its handle, and the handles of functions taken from
/// it, are invalid from now on. Launches still queued finish first, with
/// the module kept alive for them.
#[no_mangle]
pub extern "C" fn xdal_module_unload(module: xdal_module_t) -> xdal_status_t {
    boundary(c"xdal_module_unload", || {
        crate::objects::module(module)?;
        let Some(object) = MODULES.remove(module as usize) else {
            bail!(XDAL_ERROR_INVALID_HANDLE, "{module:p} was unloaded by another thread");
        };
        object.forget_functions();
        Ok(())
    })
}

/// Writes the kernel called `name` in `module`; `XDAL_ERROR_NOT_FOUND` if
/// there is none. Asking twice gives the same handle.
#[no_mangle]
pub extern "C" fn xdal_module_get_function(
    function: *mut xdal_function_t,
    module: xdal_module_t,
    name: *const c_char,
) -> xdal_status_t {
    boundary(c"xdal_module_get_function", || {
        let out = Out::new(function, "function")?;
        require(name, "name")?;
        let module = crate::objects::module(module)?;
        // SAFETY: non-NULL; the caller passes a NUL-terminated string.
        let name = unsafe { CStr::from_ptr(name) };
        out.write(module.function(name)? as xdal_function_t);
        Ok(())
    })
}

/// Host kernels already wrapped, so one kernel is one handle for the life
/// of the process.
static HOST_FUNCTIONS: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

/// Wraps a host function as a kernel, for backends that run host code (the
/// fake backend); others return `XDAL_ERROR_NOT_SUPPORTED`. Wrapping the
/// same function twice gives the same handle.
#[no_mangle]
pub extern "C" fn xdal_function_from_host(function: *mut xdal_function_t, kernel: xdal_host_kernel_t) -> xdal_status_t {
    boundary(c"xdal_function_from_host", || {
        let out = Out::new(function, "function")?;
        let Some(code) = kernel else { bail!(XDAL_ERROR_NULL_POINTER, "kernel is NULL") };
        let backend = backend()?;
        let mut cache = HOST_FUNCTIONS.lock().ignore_poison();
        let cache = cache.get_or_insert_with(HashMap::new);
        let key = code as usize;
        if let Some(&handle) = cache.get(&key) {
            out.write(handle as xdal_function_t);
            return Ok(());
        }
        let mut native = std::ptr::null_mut();
        call!(backend, function_from_host(kernel, &mut native))?;
        let handle = insert_handle(&FUNCTIONS, FunctionObj::new(backend, native), "functions")?;
        cache.insert(key, handle);
        out.write(handle as xdal_function_t);
        Ok(())
    })
}

/// A checked launch, ready for the backend.
struct Launch<'a> {
    grid: xdal_dim3_t,
    block: xdal_dim3_t,
    shared_mem_bytes: usize,
    args: &'a [xdal_kernel_arg_t],
}

impl Launch<'_> {
    #[inline(always)]
    fn enqueue(&self, backend: &'static Backend, function: &FunctionObj, stream: &StreamObj) -> XResult<()> {
        let args = if self.args.is_empty() { std::ptr::null() } else { self.args.as_ptr() };
        let (grid, block, shared) = (self.grid, self.block, self.shared_mem_bytes);
        call!(backend, launch_kernel(function.native, grid, block, shared, stream.native, args, self.args.len()))
    }
}

/// A launch while something watches calls (a capture active somewhere, a
/// tracer): recorded into a capture, or traced. Out of line, so that the
/// common path is the plain launch alone.
#[cold]
#[inline(never)]
fn launch_watched(
    backend: &'static Backend,
    function: &Arc<FunctionObj>,
    stream: &Arc<StreamObj>,
    launch: Launch,
) -> XResult<()> {
    if crate::graph::capture::capturing(stream) {
        let node = || {
            let Launch { grid, block, shared_mem_bytes, args } = launch;
            Op::Kernel(KernelNode::new(Arc::clone(function), grid, block, shared_mem_bytes, args))
        };
        return crate::graph::capture::record_on(stream, node);
    }
    let info = || Info::kernel(Arc::clone(function), launch.grid, launch.block);
    activity::traced(backend, stream, info, || launch.enqueue(backend, function, stream))
}

/// The largest total size of a launch's arguments, as on CUDA.
const MAX_ARG_BYTES: usize = 4096;

/// Each dimension from 1 to its limit. The test alone is inlined: the
/// refusal, which names the axis, is built out of line.
#[inline]
fn check_dims(what: &str, dims: xdal_dim3_t, limit: [u32; 3]) -> XResult<()> {
    let given = [dims.x, dims.y, dims.z];
    if given.iter().zip(&limit).all(|(&n, &max)| n.wrapping_sub(1) < max) {
        return Ok(());
    }
    Err(dims_refusal(what, given, limit))
}

#[cold]
#[inline(never)]
fn dims_refusal(what: &str, given: [u32; 3], limit: [u32; 3]) -> Error {
    let (axis, n, max) = ["x", "y", "z"]
        .into_iter()
        .zip(given.into_iter().zip(limit))
        .map(|(axis, (n, max))| (axis, n, max))
        .find(|&(_, n, max)| n == 0 || n > max)
        .expect("called for a dimension out of range");
    err!(XDAL_ERROR_INVALID_VALUE, "{what}.{axis} is {n}: it must be from 1 to {max}")
}

/// Enqueues `function` on `stream` over a `grid` of blocks of `block`
/// threads, each block with `shared_mem_bytes` of shared memory. The
/// argument values are copied now: the caller may reuse them as soon as
/// this returns. Zero or too large dimensions, too much shared memory, or
/// argument sizes a built-in kernel does not take are
/// `XDAL_ERROR_INVALID_VALUE`, as is a `num_args` above 4096 (the byte
/// limit of all arguments together), refused before `args` is read. For
/// a built-in kernel every pointer argument, with the bytes the kernel
/// will touch from it, must lie inside one live allocation of the
/// stream's device, else `XDAL_ERROR_INVALID_POINTER` (a message names
/// the argument) and nothing is enqueued. A kernel that fails makes the
/// stream report
/// `XDAL_ERROR_LAUNCH_FAILED` at its next synchronize or query.
#[no_mangle]
pub extern "C" fn xdal_launch_kernel(
    function: xdal_function_t,
    grid: xdal_dim3_t,
    block: xdal_dim3_t,
    shared_mem_bytes: usize,
    stream: xdal_stream_t,
    args: *const xdal_kernel_arg_t,
    num_args: usize,
) -> xdal_status_t {
    boundary(c"xdal_launch_kernel", || {
        let function = crate::objects::function(function)?;
        let stream = crate::objects::stream(stream)?;
        let backend = backend()?;
        let props = backend.properties(stream.device);
        check_dims("grid", grid, props.max_grid_dim)?;
        check_dims("block", block, props.max_block_dim)?;
        let threads = u64::from(block.x) * u64::from(block.y) * u64::from(block.z);
        if threads > u64::from(props.max_threads_per_block) {
            bail!(
                XDAL_ERROR_INVALID_VALUE,
                "a block of {threads} threads exceeds the device's {} per block",
                props.max_threads_per_block
            );
        }
        if shared_mem_bytes as u64 > props.shared_mem_per_block {
            bail!(
                XDAL_ERROR_INVALID_VALUE,
                "{shared_mem_bytes} bytes of shared memory exceed the device's {} per block",
                props.shared_mem_per_block
            );
        }
        // Every argument takes at least one byte: a count past the byte
        // limit is refused before the caller's array is read at all.
        if num_args > MAX_ARG_BYTES {
            bail!(
                XDAL_ERROR_INVALID_VALUE,
                "num_args is {num_args}: arguments take at least a byte each, and at most {MAX_ARG_BYTES} bytes are \
                 allowed"
            );
        }
        let args: &[xdal_kernel_arg_t] = if num_args == 0 {
            &[]
        } else {
            require(args, "args")?;
            // SAFETY: non-NULL; the caller passes `num_args` entries.
            unsafe { std::slice::from_raw_parts(args, num_args) }
        };
        let mut total = 0usize;
        for (i, arg) in args.iter().enumerate() {
            if arg.value.is_null() {
                bail!(XDAL_ERROR_NULL_POINTER, "args[{i}].value is NULL");
            }
            if arg.size == 0 {
                bail!(XDAL_ERROR_INVALID_VALUE, "args[{i}].size is 0");
            }
            total = total.saturating_add(arg.size);
        }
        if total > MAX_ARG_BYTES {
            bail!(XDAL_ERROR_INVALID_VALUE, "the arguments take {total} bytes; at most {MAX_ARG_BYTES} are allowed");
        }
        if let Some(builtin) = &function.builtin {
            let device = stream.device.get();
            let reaches = builtin.reaches(args)?;
            // One look at the thread's cache for every pointer; the check
            // pointer by pointer (which says what is wrong) when it cannot
            // tell.
            if !REGISTRY.cached_on_device(reaches.iter().map(|r| (r.addr, r.bytes)), device) {
                check_reaches(builtin, &reaches, device, |addr, bytes, role| classify(backend, addr, bytes, role))?;
            }
        }
        let launch = Launch { grid, block, shared_mem_bytes, args };
        if crate::observe::any() {
            return launch_watched(backend, &function, &stream, launch);
        }
        launch.enqueue(backend, &function, &stream)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim3(x: u32, y: u32, z: u32) -> xdal_dim3_t {
        xdal_dim3_t { x, y, z }
    }

    #[test]
    fn dimensions_from_one_to_their_limit_pass_and_a_refusal_names_the_first_axis_out() {
        let limit = [8, 4, u32::MAX];
        assert!(check_dims("grid", dim3(1, 1, 1), limit).is_ok());
        assert!(check_dims("grid", dim3(8, 4, u32::MAX), limit).is_ok());
        for (dims, message) in [
            (dim3(0, 1, 1), "grid.x is 0: it must be from 1 to 8"),
            (dim3(1, 5, 1), "grid.y is 5: it must be from 1 to 4"),
            (dim3(9, 0, 1), "grid.x is 9: it must be from 1 to 8"),
            (dim3(1, 1, 0), "grid.z is 0: it must be from 1 to 4294967295"),
        ] {
            let refused = check_dims("grid", dims, limit).expect_err("out of range");
            assert_eq!(refused.status, xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE);
            assert_eq!(refused.message, message);
        }
    }
}
