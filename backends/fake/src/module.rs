//! Modules and functions. On the fake backend a module is a host shared
//! library whose exported kernels have the `xdal_host_kernel_t` signature,
//! or the built-in module. A function keeps its module (and so its code)
//! loaded for as long as it, or a launch of it, lives.
use crate::error::{failure, FakeResult};
use std::ffi::{c_char, c_void, CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use xdal_abi::{xdal_kernel_context_t, xdal_status_raw};

/// A kernel's code.
pub(crate) type KernelFn = unsafe extern "C" fn(*const xdal_kernel_context_t, *const *mut c_void) -> xdal_status_raw;

pub(crate) enum FakeModule {
    Builtin,
    /// A `dlopen`ed library; closed when the last function of it is gone.
    Library {
        handle: *mut c_void,
        _image: Option<OwnedFd>,
    },
}

// SAFETY: a dlopen handle may be used from any thread; the memfd is only
// kept open.
unsafe impl Send for FakeModule {}
// SAFETY: as above; nothing is mutated after loading.
unsafe impl Sync for FakeModule {}

impl Drop for FakeModule {
    fn drop(&mut self) {
        if let FakeModule::Library { handle, .. } = self {
            // SAFETY: the handle came from dlopen and no function of the
            // module is alive any more (each holds an Arc of the module).
            unsafe { libc::dlclose(*handle) };
        }
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown dynamic loader error".into();
    }
    // SAFETY: non-NULL and NUL-terminated per dlerror's contract.
    unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
}

fn open(path: &CStr, image: Option<OwnedFd>, shown: &str) -> FakeResult<FakeModule> {
    // SAFETY: dlopen with a valid C string; failure is reported as NULL.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(failure!(
            XDAL_ERROR_INVALID_VALUE,
            "{shown} is not a loadable kernel module (a host shared library): {}",
            dl_error()
        ));
    }
    Ok(FakeModule::Library { handle, _image: image })
}

impl FakeModule {
    /// Loads a module file.
    pub fn load(path: &CStr) -> FakeResult<FakeModule> {
        let shown = path.to_string_lossy();
        if !xdal_backend_support::user_path::from_c(path).exists() {
            return Err(failure!(XDAL_ERROR_NOT_FOUND, "module file {shown:?} does not exist"));
        }
        open(path, None, &format!("{shown:?}"))
    }

    /// Loads a module image from memory, through an anonymous file.
    pub fn load_data(image: &[u8]) -> FakeResult<FakeModule> {
        // SAFETY: memfd_create with a valid name; failure is reported as -1.
        let fd = unsafe { libc::memfd_create(c"xdal-module".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            let err = std::io::Error::last_os_error();
            return Err(failure!(XDAL_ERROR_OUT_OF_MEMORY, "cannot create a file for the module image: {err}"));
        }
        // SAFETY: fd is a fresh descriptor we own.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned.try_clone().map_err(|e| failure!(XDAL_ERROR_INTERNAL, "{e}"))?);
        std::io::Write::write_all(&mut file, image)
            .map_err(|e| failure!(XDAL_ERROR_OUT_OF_MEMORY, "cannot write the module image: {e}"))?;
        let path = CString::new(format!("/proc/self/fd/{}", owned.as_raw_fd())).expect("no NUL in a path");
        open(&path, Some(owned), &format!("the {}-byte module image", image.len()))
    }

    /// Finds a kernel by name.
    pub fn function(self: &Arc<Self>, name: &CStr) -> FakeResult<FakeFunction> {
        let shown = name.to_string_lossy();
        match self.as_ref() {
            FakeModule::Builtin => {
                let builtin = name
                    .to_str()
                    .ok()
                    .and_then(crate::builtin::find)
                    .ok_or_else(|| failure!(XDAL_ERROR_NOT_FOUND, "no built-in kernel is called {shown:?}"))?;
                Ok(FakeFunction {
                    kernel: builtin.kernel,
                    arg_sizes: Some(&builtin.arg_sizes),
                    name: builtin.name.clone(),
                    _module: Some(self.clone()),
                })
            }
            FakeModule::Library { handle, .. } => {
                // SAFETY: dlsym on a live handle with a valid C string.
                let symbol = unsafe { libc::dlsym(*handle, name.as_ptr()) };
                if symbol.is_null() {
                    return Err(failure!(XDAL_ERROR_NOT_FOUND, "the module has no kernel called {shown:?}"));
                }
                // SAFETY: kernels of a fake-backend module have the
                // xdal_host_kernel_t signature by contract (docs/kernels.md).
                let kernel = unsafe { std::mem::transmute::<*mut c_void, KernelFn>(symbol) };
                Ok(FakeFunction { kernel, arg_sizes: None, name: shown.into_owned(), _module: Some(self.clone()) })
            }
        }
    }
}

/// A launchable kernel.
pub(crate) struct FakeFunction {
    pub kernel: KernelFn,
    /// The exact argument sizes, for kernels whose signature is known.
    pub arg_sizes: Option<&'static [usize]>,
    pub name: String,
    _module: Option<Arc<FakeModule>>,
}

impl FakeFunction {
    /// Wraps a host function.
    pub fn from_host(kernel: KernelFn) -> FakeFunction {
        FakeFunction {
            kernel,
            arg_sizes: None,
            name: format!("host kernel {:p}", kernel as *const c_char),
            _module: None,
        }
    }
}
