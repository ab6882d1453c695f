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
            Prepared::Launch(mut launch) => self.enqueue(stream, &mut launch),
            Prepared::Nothing => Ok(()),
            // What the fake kernel refuses fails the launch, reported by
            // the stream as a kernel's failure is.
            Prepared::Refused(failure) => {
                stream.fail(failure);
                Ok(())
            }
        }
    }

    /// What a launch on `device` runs, with the argument values copied: the
    /// checks and translation an eager launch and a graph's kernel node
    /// share. Refused: what is an error of the call (a size mismatch);
    /// `Prepared::Refused`: what fails the launch on its stream (a
    /// built-in's host-side check).
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
        let sizes: Vec<usize> = args.iter().map(|a| a.size).collect();
        let values: Vec<Vec<u8>> = args
            .iter()
            // SAFETY: per the contract.
            .map(|a| unsafe { std::slice::from_raw_parts(a.value.cast::<u8>(), a.size) }.to_vec())
            .collect();
        if let Signature::Builtin(b) = &self.signature {
            let expected: Vec<usize> = b.args.iter().map(|a| a.1).collect();
            check_arg_sizes(&self.name, &expected, &sizes)?;
            return self.prepare_builtin(b, device, values);
        }
        if let Signature::User(Some(params)) = &self.signature {
            check_arg_sizes(&self.name, params, &sizes)?;
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
            values,
        }))
    }

    /// A built-in's launch: the host-side checks and plan of
    /// xdal-backend-support's catalogue, then a 1-D grid of blocks
    /// (`builtin::launch_size`), with the cast's route as a
    /// trailing `uint` argument.
    fn prepare_builtin(&self, b: &Builtin, device: usize, mut values: Vec<Vec<u8>>) -> CuResult<Prepared> {
        let slices: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let plan = match b.plan(&ArgValues(&slices)) {
            Ok(plan) => plan,
            Err(message) => return Ok(Prepared::Refused(failure!(XDAL_ERROR_LAUNCH_FAILED, "{message}"))),
        };
        if plan.work_items == 0 {
            return Ok(Prepared::Nothing);
        }
        let function = self.handle(device)?;
        let max_blocks = crate::cuda().device(device).properties.max_grid_dim[0];
        let (blocks, threads) = builtin::launch_size(&plan, max_blocks);
        if let Some(route) = b.route {
            values.push(route.to_ne_bytes().to_vec());
        }
        Ok(Prepared::Launch(Launch { function, grid: [blocks, 1, 1], block: [threads, 1, 1], shared: 0, values }))
    }

    fn enqueue(&self, stream: &Stream, launch: &mut Launch) -> CuResult<()> {
        let mut args = launch.pointers();
        stream.enter()?;
        // SAFETY: a kernel of the stream's context; each argument pointer is
        // readable for its parameter's size (checked where the driver tells
        // the sizes), and the driver copies the values before returning.
        let code = unsafe {
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
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        stream.check("cuLaunchKernel", code).map_err(|mut f| {
            f.message = format!("{}: {}", self.name, f.message);
            f
        })
    }
}

/// A kernel launch, translated: what `cuLaunchKernel` or a kernel node
/// takes, with its own copy of every argument value.
pub(crate) struct Launch {
    pub function: CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub values: Vec<Vec<u8>>,
}

impl Launch {
    /// The `kernelParams` array: a pointer to each value (valid while the
    /// launch is, and not moved).
    pub fn pointers(&mut self) -> Vec<*mut c_void> {
        self.values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect()
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

/// Checks a launch's argument sizes against the kernel's parameters.
pub(crate) fn check_arg_sizes(name: &str, expected: &[usize], given: &[usize]) -> CuResult<()> {
    if expected == given {
        return Ok(());
    }
    Err(failure!(
        XDAL_ERROR_INVALID_VALUE,
        "{name} takes {} argument(s) of {expected:?} bytes; the launch gave {} of {given:?}",
        expected.len(),
        given.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::check_arg_sizes;
    use xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE;

    #[test]
    fn arguments_must_match_the_parameters_in_number_and_size() {
        assert_eq!(check_arg_sizes("k", &[8, 8, 4], &[8, 8, 4]), Ok(()));
        assert_eq!(check_arg_sizes("k", &[], &[]), Ok(()));
        let f = check_arg_sizes("k", &[8, 8, 4], &[8, 8, 8]).unwrap_err();
        assert_eq!(f.status, XDAL_ERROR_INVALID_VALUE);
        assert_eq!(f.message, "k takes 3 argument(s) of [8, 8, 4] bytes; the launch gave 3 of [8, 8, 8]");
        let f = check_arg_sizes("k", &[8, 8], &[8]).unwrap_err();
        assert!(f.message.contains("the launch gave 1 of [8]"), "{}", f.message);
        assert!(check_arg_sizes("k", &[8], &[8, 4]).is_err(), "an extra argument");
    }
}
