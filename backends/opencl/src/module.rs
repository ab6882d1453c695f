//! Modules and functions: OpenCL programs and their kernels.
//!
//! A module is a program built from OpenCL C source or loaded from a
//! program binary (`xdal_module_load` reads a file, `_load_data` takes the
//! bytes; text is compiled, anything else is taken as a binary), or the
//! built-in module, whose programs (builtin/) are built the first time
//! one of their kernels is asked for and kept for the process. A function
//! is one `cl_kernel`; its arguments are state of the kernel object, so a
//! launch sets them and enqueues under the function's lock.
use crate::builtin::{self, ArgKind, ArgValues, Builtin};
use crate::error::{failure, ClCall, ClResult, Failure};
use crate::program::{self, Program};
use crate::stream::Stream;
use cl3::kernel::{
    CL_KERNEL_ARG_ADDRESS_GLOBAL, CL_KERNEL_ARG_ADDRESS_LOCAL, CL_KERNEL_ARG_ADDRESS_QUALIFIER, CL_KERNEL_NUM_ARGS,
};
use cl3::types::cl_kernel;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex};
use xdal_abi::{xdal_dim3_t, xdal_kernel_arg_t};

pub(crate) enum ClModule {
    Builtin,
    Program(Arc<Program>),
}

/// How a user kernel's parameter is given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Param {
    /// `__global` or `__constant` pointer: an 8-byte SVM address.
    Pointer,
    /// `__local` pointer: not passed by the caller; it receives the
    /// launch's `shared_mem_bytes` (CUDA's dynamic shared memory).
    Local,
    /// Anything else, by value.
    Value,
}

enum Signature {
    Builtin(&'static Builtin),
    User(UserParams),
}

/// A user kernel's parameters, with what every launch asks of them counted
/// once, at load.
struct UserParams {
    params: Vec<Param>,
    /// How many are `__local` (at most one is allowed, checked at launch).
    locals: usize,
}

impl UserParams {
    fn new(params: Vec<Param>) -> UserParams {
        let locals = params.iter().filter(|p| **p == Param::Local).count();
        UserParams { params, locals }
    }
}

/// A kernel object; holds one reference.
struct Kernel(cl_kernel);

// SAFETY: a cl_kernel may be used from any thread; setting arguments and
// enqueuing are serialised by the function's mutex.
unsafe impl Send for Kernel {}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: this object owned one reference; launches already
        // enqueued hold the runtime's own.
        let _ = unsafe { cl3::kernel::release_kernel(self.0) };
    }
}

pub(crate) struct ClFunction {
    name: String,
    signature: Signature,
    kernel: Mutex<Kernel>,
    /// The program outlives its kernels.
    _program: Arc<Program>,
}

/// An image is OpenCL C when it is text; NUL bytes at its end are allowed
/// (a C string's terminator).
fn as_source(image: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(image).ok()?.trim_end_matches('\0');
    (!text.contains('\0')).then_some(text)
}

impl ClModule {
    pub fn load(path: &CStr) -> ClResult<ClModule> {
        let shown = path.to_string_lossy();
        let bytes = std::fs::read(&*shown).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => failure!(XDAL_ERROR_NOT_FOUND, "module file {shown:?} does not exist"),
            _ => failure!(XDAL_ERROR_INVALID_VALUE, "module file {shown:?} cannot be read: {e}"),
        })?;
        Self::from_image(&bytes, &format!("module {shown:?}"))
    }

    pub fn load_data(image: &[u8]) -> ClResult<ClModule> {
        Self::from_image(image, "the module image")
    }

    fn from_image(image: &[u8], what: &str) -> ClResult<ClModule> {
        if image.is_empty() {
            return Err(failure!(XDAL_ERROR_INVALID_VALUE, "{what} is empty"));
        }
        let program = match as_source(image) {
            Some(source) => program::from_source_shared(source, what)?,
            None => Arc::new(program::from_binary(image, what)?),
        };
        Ok(ClModule::Program(program))
    }

    pub fn function(&self, name: &CStr) -> ClResult<ClFunction> {
        let shown = name.to_string_lossy();
        let (program, builtin) = match self {
            ClModule::Builtin => {
                let b = name
                    .to_str()
                    .ok()
                    .and_then(builtin::find)
                    .ok_or_else(|| failure!(XDAL_ERROR_NOT_FOUND, "no built-in kernel is called {shown:?}"))?;
                (builtin::program(b.program)?, Some(b))
            }
            ClModule::Program(program) => (program.clone(), None),
        };
        let kernel_name = match builtin {
            Some(b) => CString::new(b.kernel.as_str()).expect("no NUL in kernel names"),
            None => name.to_owned(),
        };
        let kernel = Kernel(cl3::kernel::create_kernel(program.0, &kernel_name).map_err(|code| {
            if code == cl3::error_codes::CL_INVALID_KERNEL_NAME {
                failure!(XDAL_ERROR_NOT_FOUND, "the module has no kernel called {shown:?}")
            } else {
                crate::error::cl_failure("clCreateKernel", code)
            }
        })?);
        let signature = match builtin {
            Some(b) => {
                // A cast's route never changes: set once, after the
                // arguments each launch sets.
                if let Some(route) = b.route {
                    set_arg(&kernel, b.args.len() as u32, false, &route.to_ne_bytes(), &shown)?;
                }
                Signature::Builtin(b)
            }
            None => Signature::User(UserParams::new(params(&kernel, &shown)?)),
        };
        Ok(ClFunction { name: shown.into_owned(), signature, kernel: Mutex::new(kernel), _program: program })
    }
}

/// The parameters of a user kernel, from the argument information every
/// program is built with.
fn params(kernel: &Kernel, name: &str) -> ClResult<Vec<Param>> {
    let count: u32 = cl3::kernel::get_kernel_info(kernel.0, CL_KERNEL_NUM_ARGS).cl("clGetKernelInfo")?.into();
    (0..count)
        .map(|i| {
            let qualifier: u32 = cl3::kernel::get_kernel_arg_info(kernel.0, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER)
                .map_err(|code| {
                    failure!(
                        XDAL_ERROR_NOT_SUPPORTED,
                        "kernel {name:?}: the program carries no argument information (OpenCL error {code}), so \
                         its SVM pointers cannot be told from values; load it from source or from a binary built \
                         with -cl-kernel-arg-info"
                    )
                })?
                .into();
            Ok(match qualifier {
                CL_KERNEL_ARG_ADDRESS_GLOBAL | cl3::kernel::CL_KERNEL_ARG_ADDRESS_CONSTANT => Param::Pointer,
                CL_KERNEL_ARG_ADDRESS_LOCAL => Param::Local,
                _ => Param::Value,
            })
        })
        .collect()
}

/// Arguments a launch keeps on the stack; more go to the heap.
const INLINE_ARGS: usize = 8;

/// The bytes of each argument, passed to `with`: a launch with up to
/// `INLINE_ARGS` arguments allocates nothing for them.
///
/// # Safety
/// Each `value` is readable for `size` bytes (the front checked non-NULL).
unsafe fn with_arg_bytes<T>(args: &[xdal_kernel_arg_t], with: impl FnOnce(&[&[u8]]) -> T) -> T {
    // SAFETY: per the contract.
    let bytes = |a: &xdal_kernel_arg_t| unsafe { std::slice::from_raw_parts(a.value as *const u8, a.size) };
    if args.len() <= INLINE_ARGS {
        let mut inline: [&[u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
        inline.iter_mut().zip(args).for_each(|(slot, a)| *slot = bytes(a));
        with(&inline[..args.len()])
    } else {
        with(&args.iter().map(bytes).collect::<Vec<_>>())
    }
}

impl ClFunction {
    /// Enqueues a launch on `stream`.
    ///
    /// # Safety
    /// As `with_arg_bytes`.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> ClResult<()> {
        match &self.signature {
            // SAFETY: per the contract.
            Signature::Builtin(b) => unsafe { with_arg_bytes(args, |values| self.launch_builtin(b, stream, values)) },
            Signature::User(user) => self.launch_user(user, stream, grid, block, shared_mem_bytes, args),
        }
    }

    fn launch_builtin(&self, b: &Builtin, stream: &Stream, values: &[&[u8]]) -> ClResult<()> {
        if !values.iter().map(|v| v.len()).eq(b.args.iter().map(|a| a.1)) {
            let expected: Vec<usize> = b.args.iter().map(|a| a.1).collect();
            let given: Vec<usize> = values.iter().map(|v| v.len()).collect();
            return Err(failure!(
                XDAL_ERROR_INVALID_VALUE,
                "{} takes {} argument(s) of {expected:?} bytes; the launch gave {} of {given:?}",
                self.name,
                expected.len(),
                given.len()
            ));
        }
        let plan = match b.plan(&ArgValues(values)) {
            Ok(plan) => plan,
            // What the fake kernel refuses fails the launch, reported by
            // the stream as a kernel's failure is.
            Err(message) => {
                crate::timing::no_command();
                stream.fail(failure!(XDAL_ERROR_LAUNCH_FAILED, "{message}"));
                return Ok(());
            }
        };
        if plan.work_items == 0 {
            crate::timing::no_command();
            return Ok(());
        }
        let kernel = self.kernel.lock().unwrap_or_else(|p| p.into_inner());
        for (i, (value, (kind, _))) in values.iter().zip(&b.args).enumerate() {
            set_arg(&kernel, i as u32, *kind == ArgKind::Pointer, value, &self.name)?;
        }
        enqueue(&kernel, stream, &[plan.work_items], None)
    }

    /// # Safety
    /// As `with_arg_bytes`.
    unsafe fn launch_user(
        &self,
        user: &UserParams,
        stream: &Stream,
        grid: xdal_dim3_t,
        block: xdal_dim3_t,
        shared_mem_bytes: usize,
        args: &[xdal_kernel_arg_t],
    ) -> ClResult<()> {
        let (params, locals) = (&user.params[..], user.locals);
        if args.len() + locals != params.len() {
            return Err(failure!(
                XDAL_ERROR_INVALID_VALUE,
                "{} takes {} argument(s) (its __local parameters receive shared_mem_bytes); the launch gave {}",
                self.name,
                params.len() - locals,
                args.len()
            ));
        }
        if locals > 1 {
            return Err(failure!(
                XDAL_ERROR_NOT_SUPPORTED,
                "{} has more than one __local parameter; a launch gives one block of shared memory",
                self.name
            ));
        }
        // Two 32-bit factors: their product fits a 64-bit usize (asserted
        // below the function).
        let global = [(grid.x, block.x), (grid.y, block.y), (grid.z, block.z)].map(|(g, b)| g as usize * b as usize);
        let local = [block.x as usize, block.y as usize, block.z as usize];
        // Trailing dimensions of one work item are left out: OpenCL answers
        // size 1 and id 0 for a dimension past work_dim, as for one of size
        // 1, and the runtime sets up fewer dimensions per command.
        let dims = global.iter().rposition(|&g| g > 1).map_or(1, |last| last + 1);
        let kernel = self.kernel.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = args.iter();
        for (i, param) in params.iter().enumerate() {
            let index = i as u32;
            if *param == Param::Local {
                // SAFETY: a live kernel (held by this function); a __local
                // parameter takes a size and a NULL value.
                unsafe { crate::command::set_arg(kernel.0, index, shared_mem_bytes.max(1), std::ptr::null()) }
                    .map_err(|code| arg_failure(&self.name, i, code))?;
                continue;
            }
            let arg = next.next().expect("counted above");
            // SAFETY: per the contract, `value` is readable for `size` bytes.
            let value = unsafe { std::slice::from_raw_parts(arg.value as *const u8, arg.size) };
            if *param == Param::Pointer && value.len() != 8 {
                return Err(failure!(
                    XDAL_ERROR_INVALID_VALUE,
                    "{}: argument {i} is a pointer (8 bytes); the launch gave {} bytes",
                    self.name,
                    value.len()
                ));
            }
            set_arg(&kernel, index, *param == Param::Pointer, value, &self.name)?;
        }
        enqueue(&kernel, stream, &global[..dims], Some(&local))
    }
}

const _: () = assert!(usize::BITS == 64, "a launch's global size is the product of two u32 in a usize");

fn arg_failure(name: &str, index: usize, code: i32) -> Failure {
    failure!(
        XDAL_ERROR_INVALID_VALUE,
        "{name}: argument {index} refused by the runtime (OpenCL error {code}, {}); for a value, is its size the \
         parameter's?",
        cl3::error_codes::error_text(code)
    )
}

fn set_arg(kernel: &Kernel, index: u32, pointer: bool, value: &[u8], name: &str) -> ClResult<()> {
    let result = if pointer {
        let address = usize::from_ne_bytes(value.try_into().expect("an 8-byte pointer"));
        // SAFETY: a live kernel (held by its function) whose parameter
        // `index` is a global pointer, set to an SVM address (NULL too, which
        // OpenCL allows).
        unsafe { crate::command::set_arg_svm(kernel.0, index, address as *const c_void) }
    } else {
        // SAFETY: a live kernel (held by its function); `value` holds
        // `value.len()` readable bytes, which the runtime copies at the call.
        unsafe { crate::command::set_arg(kernel.0, index, value.len(), value.as_ptr() as *const c_void) }
    };
    result.map_err(|code| arg_failure(name, index as usize, code))
}

#[inline]
fn enqueue(kernel: &Kernel, stream: &Stream, global: &[usize], local: Option<&[usize; 3]>) -> ClResult<()> {
    let local = local.map_or(std::ptr::null(), |l| l.as_ptr());
    stream.enqueue("clEnqueueNDRangeKernel", |queue, event| {
        // SAFETY: live queue and kernel with every argument set; `local` is
        // NULL or holds `global.len()` entries.
        unsafe { crate::command::kernel(queue, kernel.0, global, local, event) }
    })
}
