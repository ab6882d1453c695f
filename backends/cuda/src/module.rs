//! Modules and functions: PTX, cubin or fatbin images loaded with
//! `cuModuleLoadData`, and their kernels.
//!
//! A CUDA module belongs to one context while an xdal module serves every
//! device: an image is loaded on device 0 when it is given (so that an
//! image the driver refuses is refused then), and on another device the
//! first time one of its kernels is launched there. A function likewise
//! holds one `CUfunction` per device. Built-in kernels are functions of
//! the built-in programs' images (builtin.rs).
use crate::builtin;
use crate::driver::{CUfunction, CUmodule, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND};
use crate::error::{cuda_failure, failure, CuResult, Failure};
use crate::stream::Stream;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, OnceLock};
use xdal_abi::{xdal_dim3_t, xdal_kernel_arg_t};
use xdal_backend_support::kernels::{ArgValues, Builtin};

/// A module image and its CUDA module on each device where it is loaded.
pub(crate) struct Image {
    /// The image, NUL-terminated (PTX must be; a binary ignores the byte).
    bytes: Vec<u8>,
    what: String,
    loaded: Vec<OnceLock<CuResult<Loaded>>>,
}

/// A CUDA module of one device.
struct Loaded {
    device: usize,
    module: CUmodule,
}

// SAFETY: a CUDA module may be used from any thread of the process.
unsafe impl Send for Loaded {}
// SAFETY: as above.
unsafe impl Sync for Loaded {}

impl Drop for Loaded {
    fn drop(&mut self) {
        if crate::cuda().device(self.device).enter().is_ok() {
            // SAFETY: the device's context is current. Launches still queued
            // may run the module's code: they finish first (no function of
            // it is left to launch again: each holds the image alive).
            let _ = unsafe { (crate::api().ctx_synchronize)() };
            // SAFETY: the module is this object's, and nothing uses it now.
            let _ = unsafe { (crate::api().module_unload)(self.module) };
        }
    }
}

impl Image {
    /// An image of `bytes` (not empty), called `what` in messages.
    pub fn new(bytes: &[u8], what: String) -> Image {
        let mut bytes = bytes.to_vec();
        if bytes.last() != Some(&0) {
            bytes.push(0);
        }
        let devices = crate::cuda().devices.len();
        Image { bytes, what, loaded: (0..devices).map(|_| OnceLock::new()).collect() }
    }

    /// The image's CUDA module on `device`, loaded the first time.
    pub fn module(&self, device: usize) -> CuResult<CUmodule> {
        let loaded = self.loaded[device].get_or_init(|| {
            let dev = crate::cuda().device(device);
            dev.enter()?;
            let mut module: CUmodule = std::ptr::null_mut();
            // SAFETY: a valid output; the image is NUL-terminated; the
            // device's context is current.
            let code = unsafe { (crate::api().module_load_data)(&mut module, self.bytes.as_ptr().cast()) };
            dev.check("cuModuleLoadData", code).map_err(|mut f| {
                let (major, minor) = dev.properties.capability;
                f.message = format!(
                    "{} is not a module the CUDA driver ({}) loads on device {device} (compute capability \
                     {major}.{minor}): {}",
                    self.what,
                    crate::driver::version_text(crate::cuda().driver.version),
                    f.message
                );
                f
            })?;
            Ok(Loaded { device, module })
        });
        loaded.as_ref().map(|l| l.module).map_err(Failure::clone)
    }
}

pub(crate) enum CuModule {
    Builtin,
    Image(Arc<Image>),
}

impl CuModule {
    pub fn load(path: &CStr) -> CuResult<CuModule> {
        let shown = path.to_string_lossy();
        let bytes = std::fs::read(&*shown).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => failure!(XDAL_ERROR_NOT_FOUND, "module file {shown:?} does not exist"),
            _ => failure!(XDAL_ERROR_INVALID_VALUE, "module file {shown:?} cannot be read: {e}"),
        })?;
        Self::from_image(&bytes, format!("module {shown:?}"))
    }

    pub fn load_data(image: &[u8]) -> CuResult<CuModule> {
        Self::from_image(image, "the module image".to_string())
    }

    fn from_image(bytes: &[u8], what: String) -> CuResult<CuModule> {
        if bytes.is_empty() {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "{what} is empty"));
        }
        let image = Arc::new(Image::new(bytes, what));
        image.module(0)?;
        Ok(CuModule::Image(image))
    }

    pub fn function(&self, name: &CStr) -> CuResult<CuFunction> {
        let shown = name.to_string_lossy().into_owned();
        match self {
            CuModule::Builtin => {
                let b = name
                    .to_str()
                    .ok()
                    .and_then(xdal_backend_support::kernels::find)
                    .ok_or_else(|| failure!(XDAL_ERROR_NOT_FOUND, "no built-in kernel is called {shown:?}"))?;
                let kernel = CString::new(b.kernel.as_str()).expect("no NUL in kernel names");
                let function = CuFunction::new(shown, builtin::image(b.program)?, kernel, Signature::Builtin(b));
                // Loads the program on device 0 now: a build failure is the
                // call's, not a later launch's.
                function.handle(0)?;
                Ok(function)
            }
            CuModule::Image(image) => {
                let mut function = CuFunction::new(shown, image.clone(), name.to_owned(), Signature::User(None));
                let handle = function.handle(0)?;
                function.signature = Signature::User(param_sizes(handle, &function.name)?);
                Ok(function)
            }
        }
    }
}

enum Signature {
    Builtin(&'static Builtin),
    /// The byte size of each parameter, where the driver tells
    /// (`cuFuncGetParamInfo`, CUDA 12.4 and later); None: not checked.
    User(Option<Vec<usize>>),
}

pub(crate) struct CuFunction {
    name: String,
    image: Arc<Image>,
    kernel: CString,
    signature: Signature,
    handles: Vec<OnceLock<CuResult<Handle>>>,
}

struct Handle(CUfunction);
// SAFETY: a CUfunction may be launched from any thread; it lives as long
// as its module, which the function's image keeps.
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

impl CuFunction {
    fn new(name: String, image: Arc<Image>, kernel: CString, signature: Signature) -> CuFunction {
        let handles = (0..crate::cuda().devices.len()).map(|_| OnceLock::new()).collect();
        CuFunction { name, image, kernel, signature, handles }
    }

    /// The kernel on `device`, its module loaded there the first time.
    fn handle(&self, device: usize) -> CuResult<CUfunction> {
        let handle = self.handles[device].get_or_init(|| {
            let module = self.image.module(device)?;
            let dev = crate::cuda().device(device);
            dev.enter()?;
            let mut function: CUfunction = std::ptr::null_mut();
            // SAFETY: a valid output, a live module, a NUL-terminated name.
            match unsafe { (crate::api().module_get_function)(&mut function, module, self.kernel.as_ptr()) } {
                CUDA_ERROR_NOT_FOUND => {
                    Err(failure!(XDAL_ERROR_NOT_FOUND, "the module has no kernel called {:?}", self.name))
                }
                code => dev.check("cuModuleGetFunction", code).map(|()| Handle(function)),
            }
        });
        handle.as_ref().map(|h| h.0).map_err(Failure::clone)
    }

    /// Enqueues a launch on `stream`.
    ///
    /// # Safety
    /// Each argument's `value` is readable for `size` bytes (the front
    /// checked non-NULL).
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> CuResult<()> {
        // SAFETY: per the contract.
        match unsafe { self.prepare(stream.device, grid, block, shared_mem_bytes, args) }? {
            // SAFETY: per the contract.
            Prepared::Launch(launch) => unsafe { self.enqueue(stream, &launch, args) },
            Prepared::Nothing => Ok(()),
            // What the fake kernel refuses fails the launch, reported by
            // the stream as a kernel's failure is.
            Prepared::Refused(failure) => {
                stream.fail(failure);
                Ok(())
            }
        }
    }

    /// What a launch on `device` runs: the checks and translation an eager
    /// launch and a graph's kernel node share. The argument values are not
    /// copied: `cuLaunchKernel` and `cuGraphAddKernelNode` copy them before
    /// they return, so the launch passes pointers to the caller's own
    /// (`Launch::with_params`). Refused: what is an error of the call (a
    /// size mismatch); `Prepared::Refused`: what fails the launch on its
    /// stream (a built-in's host-side check).
    ///
    /// # Safety
    /// Each argument's `value` is readable for `size` bytes.
    pub unsafe fn prepare(
        &self,
        device: usize,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> CuResult<Prepared> {
        if let Signature::Builtin(b) = &self.signature {
            check_arg_sizes(&self.name, b.args.iter().map(|a| a.1), args)?;
            // SAFETY: per the contract.
            return unsafe { self.prepare_builtin(b, device, args) };
        }
        if let Signature::User(Some(params)) = &self.signature {
            check_arg_sizes(&self.name, params.iter().copied(), args)?;
        }
        let shared = u32::try_from(shared_mem_bytes).map_err(|_| {
            failure!(XDAL_ERROR_INVALID_VALUE, "{}: {shared_mem_bytes} bytes of shared memory", self.name)
        })?;
        let function = self.handle(device)?;
        Ok(Prepared::Launch(Launch {
            function,
            grid: [grid.x, grid.y, grid.z],
            block: [block.x, block.y, block.z],
            shared,
            route: None,
        }))
    }

    /// A built-in's launch: the host-side checks and plan of
    /// xdal-backend-support's catalogue, then a 1-D grid of blocks
    /// (`builtin::launch_size`), with the cast's route as a trailing `uint`
    /// argument.
    ///
    /// # Safety
    /// As for `prepare`; the sizes match the built-in's parameters.
    unsafe fn prepare_builtin(&self, b: &Builtin, device: usize, args: &[xdal_kernel_arg_t]) -> CuResult<Prepared> {
        // The plan reads the values in place: a built-in takes a handful of
        // arguments, so their slices fit on the stack.
        let mut slices: [&[u8]; MAX_BUILTIN_ARGS] = [&[]; MAX_BUILTIN_ARGS];
        let Some(slots) = slices.get_mut(..args.len()) else {
            return Err(failure!(XDAL_ERROR_INTERNAL, "{} takes {} arguments", self.name, args.len()));
        };
        for (slot, arg) in slots.iter_mut().zip(args) {
            // SAFETY: per the contract.
            *slot = unsafe { std::slice::from_raw_parts(arg.value.cast::<u8>(), arg.size) };
        }
        let plan = match b.plan(&ArgValues(&slices[..args.len()])) {
            Ok(plan) => plan,
            Err(message) => return Ok(Prepared::Refused(failure!(XDAL_ERROR_LAUNCH_FAILED, "{message}"))),
        };
        if plan.work_items == 0 {
            return Ok(Prepared::Nothing);
        }
        let function = self.handle(device)?;
        let max_blocks = crate::cuda().device(device).properties.max_grid_dim[0];
        let (blocks, threads) = builtin::launch_size(&plan, max_blocks);
        Ok(Prepared::Launch(Launch {
            function,
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
            shared: 0,
            route: b.route,
        }))
    }

    /// # Safety
    /// `args` are the launch's, each value readable for its size.
    unsafe fn enqueue(&self, stream: &Stream, launch: &Launch, args: &[xdal_kernel_arg_t]) -> CuResult<()> {
        stream.enter()?;
        // SAFETY: the arguments per the contract; a kernel of the stream's
        // context; each parameter pointer is readable for its parameter's
        // size (checked where the driver tells the sizes), and the driver
        // copies the values before returning.
        let code = unsafe {
            launch.with_params(args, |params| {
                (crate::api().launch_kernel)(
                    launch.function,
                    launch.grid[0],
                    launch.grid[1],
                    launch.grid[2],
                    launch.block[0],
                    launch.block[1],
                    launch.block[2],
                    launch.shared,
                    stream.handle,
                    params,
                    std::ptr::null_mut(),
                )
            })
        };
        stream.check("cuLaunchKernel", code).map_err(|mut f| {
            f.message = format!("{}: {}", self.name, f.message);
            f
        })
    }
}

/// Room for a built-in's arguments on the stack (six at most; a test keeps
/// the catalogue within it).
const MAX_BUILTIN_ARGS: usize = 16;

/// Parameters a launch passes from an array on the stack; more take a Vec.
const INLINE_PARAMS: usize = 32;

/// A kernel launch, translated: what `cuLaunchKernel` or a kernel node
/// takes, less the argument values, which stay the caller's.
pub(crate) struct Launch {
    pub function: CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    /// A built-in cast's route, its trailing `uint` parameter.
    pub route: Option<u32>,
}

impl Launch {
    /// Calls `with` with the `kernelParams` array: a pointer to each of
    /// `args`' values, then to the route, valid during the call. No
    /// allocation for up to `INLINE_PARAMS` parameters (the eager launch is
    /// a hot path).
    ///
    /// # Safety
    /// Each argument's `value` is readable for its size during the call.
    pub unsafe fn with_params<R>(&self, args: &[xdal_kernel_arg_t], with: impl FnOnce(*mut *mut c_void) -> R) -> R {
        let route = self.route;
        let count = args.len() + usize::from(route.is_some());
        // The driver takes `void **` but only reads through it.
        let fill = |params: &mut [*mut c_void]| {
            for (param, arg) in params.iter_mut().zip(args) {
                *param = arg.value.cast_mut();
            }
            if let Some(route) = &route {
                params[args.len()] = std::ptr::from_ref(route).cast_mut().cast();
            }
        };
        if count <= INLINE_PARAMS {
            let mut params = [std::ptr::null_mut(); INLINE_PARAMS];
            fill(&mut params[..count]);
            with(params.as_mut_ptr())
        } else {
            let mut params = vec![std::ptr::null_mut(); count];
            fill(&mut params);
            with(params.as_mut_ptr())
        }
    }
}

/// What a launch comes to.
pub(crate) enum Prepared {
    Launch(Launch),
    /// No work (a built-in with no work items).
    Nothing,
    /// A built-in's host-side check refused it: the launch fails on its
    /// stream (`XDAL_ERROR_LAUNCH_FAILED`), as a faulting kernel would.
    Refused(Failure),
}

/// The byte size of each of `function`'s parameters, or None where the
/// driver cannot tell (before CUDA 12.4): the launch's sizes are then
/// passed as given, as the CUDA runtime does.
fn param_sizes(function: CUfunction, name: &str) -> CuResult<Option<Vec<usize>>> {
    let Some(info) = crate::cuda().driver.func_get_param_info else { return Ok(None) };
    let mut sizes = Vec::new();
    // A kernel takes at most 32764 bytes of parameters, each at least one.
    for index in 0..32764 {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: a live function and valid outputs.
        match unsafe { info(function, index, &mut offset, &mut size) } {
            0 => sizes.push(size),
            // Past the last parameter.
            CUDA_ERROR_INVALID_VALUE => break,
            code => {
                let f = cuda_failure("cuFuncGetParamInfo", code);
                return Err(failure!(XDAL_ERROR_INTERNAL, "{name}: {}", f.message));
            }
        }
    }
    Ok(Some(sizes))
}

/// Checks a launch's argument sizes against the kernel's parameters
/// (allocating only for the message of a mismatch).
pub(crate) fn check_arg_sizes(
    name: &str,
    expected: impl Iterator<Item = usize> + Clone,
    args: &[xdal_kernel_arg_t],
) -> CuResult<()> {
    if expected.clone().eq(args.iter().map(|a| a.size)) {
        return Ok(());
    }
    let expected: Vec<usize> = expected.collect();
    let given: Vec<usize> = args.iter().map(|a| a.size).collect();
    Err(failure!(
        XDAL_ERROR_INVALID_VALUE,
        "{name} takes {} argument(s) of {expected:?} bytes; the launch gave {} of {given:?}",
        expected.len(),
        given.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::{check_arg_sizes, Launch};
    use std::ffi::c_void;
    use xdal_abi::xdal_kernel_arg_t;
    use xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE;

    fn check(expected: &[usize], given: &[usize]) -> Result<(), xdal_backend_support::Failure> {
        let args: Vec<xdal_kernel_arg_t> =
            given.iter().map(|&size| xdal_kernel_arg_t { value: std::ptr::null(), size }).collect();
        check_arg_sizes("k", expected.iter().copied(), &args)
    }

    #[test]
    fn arguments_must_match_the_parameters_in_number_and_size() {
        assert_eq!(check(&[8, 8, 4], &[8, 8, 4]), Ok(()));
        assert_eq!(check(&[], &[]), Ok(()));
        let f = check(&[8, 8, 4], &[8, 8, 8]).unwrap_err();
        assert_eq!(f.status, XDAL_ERROR_INVALID_VALUE);
        assert_eq!(f.message, "k takes 3 argument(s) of [8, 8, 4] bytes; the launch gave 3 of [8, 8, 8]");
        let f = check(&[8, 8], &[8]).unwrap_err();
        assert!(f.message.contains("the launch gave 1 of [8]"), "{}", f.message);
        assert!(check(&[8], &[8, 4]).is_err(), "an extra argument");
    }

    #[test]
    fn every_built_ins_arguments_fit_the_stack_array() {
        for b in xdal_backend_support::kernels::all() {
            assert!(b.args.len() <= super::MAX_BUILTIN_ARGS, "{} takes {} arguments", b.name, b.args.len());
        }
    }

    #[test]
    fn parameters_point_at_the_callers_values_then_the_route() {
        let (a, b) = (7u64, 9u32);
        let args = [
            xdal_kernel_arg_t { value: std::ptr::from_ref(&a).cast(), size: 8 },
            xdal_kernel_arg_t { value: std::ptr::from_ref(&b).cast(), size: 4 },
        ];
        let mut launch = Launch { function: std::ptr::null_mut(), grid: [1; 3], block: [1; 3], shared: 0, route: None };
        let read = |params: *mut *mut c_void, n: usize| -> Vec<*mut c_void> {
            // SAFETY: `with_params` passes `n` parameters.
            unsafe { std::slice::from_raw_parts(params, n) }.to_vec()
        };
        // SAFETY: the values live through each call.
        let plain = unsafe { launch.with_params(&args, |p| read(p, 2)) };
        assert_eq!(plain, [args[0].value.cast_mut(), args[1].value.cast_mut()]);
        launch.route = Some(5);
        // SAFETY: as above; the third parameter is the route, live during
        // the call.
        let routed = unsafe { launch.with_params(&args, |p| (read(p, 2), *(*p.add(2)).cast::<u32>())) };
        assert_eq!(routed, (plain, 5));
        // More parameters than fit on the stack take the heap, the same way.
        let many: Vec<xdal_kernel_arg_t> = (0..40).map(|_| args[1]).collect();
        // SAFETY: as above.
        let got = unsafe { launch.with_params(&many, |p| read(p, 41)) };
        assert!(got[..40].iter().all(|&p| p == args[1].value.cast_mut()));
    }
}
