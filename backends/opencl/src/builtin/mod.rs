//! The OpenCL side of the built-in kernels (`xdal_backend_support::kernels`
//! has their source, names, argument layouts and host-side checks): their
//! programs, built from OpenCL C source the first time one of their kernels
//! is asked for and kept for the process.
use crate::error::{ClResult, Failure};
use crate::program::{self, Program};
use std::sync::{Arc, OnceLock};
pub(crate) use xdal_backend_support::kernels::{dtype_mask, find, ArgKind, ArgValues, Builtin};
use xdal_backend_support::kernels::{program_count, program_source};

/// A built-in program once its build has been tried.
type Built = OnceLock<Result<Arc<Program>, Failure>>;

/// Built-in program `index` (`Builtin::program`), built on first use.
pub(crate) fn program(index: usize) -> ClResult<Arc<Program>> {
    static PROGRAMS: OnceLock<Vec<Built>> = OnceLock::new();
    let programs = PROGRAMS.get_or_init(|| (0..program_count()).map(|_| OnceLock::new()).collect());
    programs[index]
        .get_or_init(|| {
            let what = format!("built-in program {index}");
            program::from_source(&program_source(index), &what).map(Arc::new)
        })
        .clone()
}
