//! How the OpenCL backend reports failure: the shared failure type and
//! panic boundary (xdal-backend-support), and OpenCL's error codes as
//! failures.
use xdal_abi::{xdal_status, xdal_status_raw};
pub(crate) use xdal_backend_support::{failure, last_message, Failure};

pub(crate) type ClResult<T> = Result<T, Failure>;

/// An OpenCL call's error code as a failure of `what`: out of resources as
/// `XDAL_ERROR_OUT_OF_MEMORY`, everything else as the runtime's error.
#[cold]
pub(crate) fn cl_failure(what: &str, code: i32) -> Failure {
    let status = match code {
        cl3::error_codes::CL_OUT_OF_RESOURCES
        | cl3::error_codes::CL_OUT_OF_HOST_MEMORY
        | cl3::error_codes::CL_MEM_OBJECT_ALLOCATION_FAILURE => xdal_status::XDAL_ERROR_OUT_OF_MEMORY,
        _ => xdal_status::XDAL_ERROR_LAUNCH_FAILED,
    };
    Failure::new(status, format!("{what}: OpenCL error {code} ({})", cl3::error_codes::error_text(code)))
}

/// `result`'s error as a failure of `what`.
pub(crate) trait ClCall<T> {
    fn cl(self, what: &str) -> ClResult<T>;
}

impl<T> ClCall<T> for Result<T, i32> {
    fn cl(self, what: &str) -> ClResult<T> {
        self.map_err(|code| cl_failure(what, code))
    }
}

/// Runs a table entry's body inside the panic boundary.
pub(crate) fn entry(body: impl FnOnce() -> ClResult<()>) -> xdal_status_raw {
    xdal_backend_support::entry("OpenCL", body)
}
