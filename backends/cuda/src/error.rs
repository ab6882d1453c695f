//! How the CUDA backend reports failure: the shared failure type and panic
//! boundary (xdal-backend-support), and the driver's error codes as xdal
//! statuses, with the CUDA error name in every message.
use crate::driver::CUresult;
use std::ffi::{c_char, CStr};
use std::sync::OnceLock;
use xdal_abi::{xdal_status, xdal_status_raw};
pub(crate) use xdal_backend_support::{failure, last_message, Failure};

pub(crate) type CuResult<T> = Result<T, Failure>;

/// `cuGetErrorName`'s signature.
pub(crate) type ErrorName = unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult;

/// The driver's `cuGetErrorName`, once the driver is open.
static ERROR_NAME: OnceLock<ErrorName> = OnceLock::new();

/// Names errors with the driver's own `cuGetErrorName` from now on (the
/// library it comes from stays loaded for the life of the process).
pub(crate) fn set_error_name_source(name: ErrorName) {
    let _ = ERROR_NAME.set(name);
}

/// Errors after which the driver refuses every further call of the context
/// (CUDA's "sticky" errors: a kernel faulted, the device stopped): the
/// device is lost to this process.
pub(crate) fn is_context_fatal(code: CUresult) -> bool {
    matches!(
        code,
        214 // CUDA_ERROR_ECC_UNCORRECTABLE
            | 220 // CUDA_ERROR_NVLINK_UNCORRECTABLE
            | 700 // CUDA_ERROR_ILLEGAL_ADDRESS
            | 702 // CUDA_ERROR_LAUNCH_TIMEOUT
            | 709 // CUDA_ERROR_CONTEXT_IS_DESTROYED
            | 710 // CUDA_ERROR_ASSERT
            | 714 // CUDA_ERROR_HARDWARE_STACK_ERROR
            | 715 // CUDA_ERROR_ILLEGAL_INSTRUCTION
            | 716 // CUDA_ERROR_MISALIGNED_ADDRESS
            | 717 // CUDA_ERROR_INVALID_ADDRESS_SPACE
            | 718 // CUDA_ERROR_INVALID_PC
            | 719 // CUDA_ERROR_LAUNCH_FAILED
    )
}

/// The xdal status of a CUDA error code (not `CUDA_SUCCESS`).
pub(crate) fn status_of(code: CUresult) -> xdal_status {
    use xdal_status::*;
    match code {
        _ if is_context_fatal(code) => XDAL_ERROR_DEVICE_LOST,
        1 => XDAL_ERROR_INVALID_VALUE,
        2 => XDAL_ERROR_OUT_OF_MEMORY,
        // Not initialised, deinitialised, a stub library, no or unavailable
        // device, a driver that does not match the kernel module.
        3 | 4 | 34 | 46 | 100 | 802 | 803 => XDAL_ERROR_BACKEND_UNAVAILABLE,
        101 => XDAL_ERROR_INVALID_DEVICE,
        // An image that is no module for this device: invalid image, no
        // binary for the GPU, invalid or too new PTX, invalid source.
        200 | 209 | 218 | 222 | 300 => XDAL_ERROR_INVALID_VALUE,
        201 | 400 => XDAL_ERROR_INVALID_HANDLE,
        301 | 500 => XDAL_ERROR_NOT_FOUND,
        600 => XDAL_ERROR_NOT_READY,
        // 800: a driver call from inside a host function, which CUDA runs
        // on a thread of its own where it refuses every call: what xdal's
        // contract says of waits there (refused, not hung).
        217 | 800 | 801 => XDAL_ERROR_NOT_SUPPORTED,
        900 => XDAL_ERROR_CAPTURE_UNSUPPORTED,
        901 => XDAL_ERROR_CAPTURE_INVALIDATED,
        // Out of resources for a launch, and everything else the runtime
        // refuses: the operation failed.
        _ => XDAL_ERROR_LAUNCH_FAILED,
    }
}

/// The names of the codes this backend maps, for when the driver cannot
/// be asked (it is not open, or does not know the code).
fn known_name(code: CUresult) -> Option<&'static str> {
    Some(match code {
        0 => "CUDA_SUCCESS",
        1 => "CUDA_ERROR_INVALID_VALUE",
        2 => "CUDA_ERROR_OUT_OF_MEMORY",
        3 => "CUDA_ERROR_NOT_INITIALIZED",
        4 => "CUDA_ERROR_DEINITIALIZED",
        34 => "CUDA_ERROR_STUB_LIBRARY",
        46 => "CUDA_ERROR_DEVICE_UNAVAILABLE",
        100 => "CUDA_ERROR_NO_DEVICE",
        101 => "CUDA_ERROR_INVALID_DEVICE",
        200 => "CUDA_ERROR_INVALID_IMAGE",
        201 => "CUDA_ERROR_INVALID_CONTEXT",
        209 => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        214 => "CUDA_ERROR_ECC_UNCORRECTABLE",
        217 => "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        218 => "CUDA_ERROR_INVALID_PTX",
        220 => "CUDA_ERROR_NVLINK_UNCORRECTABLE",
        222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        300 => "CUDA_ERROR_INVALID_SOURCE",
        301 => "CUDA_ERROR_FILE_NOT_FOUND",
        400 => "CUDA_ERROR_INVALID_HANDLE",
        500 => "CUDA_ERROR_NOT_FOUND",
        600 => "CUDA_ERROR_NOT_READY",
        700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
        701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
        704 => "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
        709 => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        710 => "CUDA_ERROR_ASSERT",
        714 => "CUDA_ERROR_HARDWARE_STACK_ERROR",
        715 => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        716 => "CUDA_ERROR_MISALIGNED_ADDRESS",
        717 => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        718 => "CUDA_ERROR_INVALID_PC",
        719 => "CUDA_ERROR_LAUNCH_FAILED",
        800 => "CUDA_ERROR_NOT_PERMITTED",
        801 => "CUDA_ERROR_NOT_SUPPORTED",
        802 => "CUDA_ERROR_SYSTEM_NOT_READY",
        803 => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        900 => "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
        901 => "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
        999 => "CUDA_ERROR_UNKNOWN",
        _ => return None,
    })
}

/// The name of a CUDA error code: the driver's (`cuGetErrorName`), else
/// this backend's own, else "unknown CUDA error".
pub(crate) fn error_name(code: CUresult) -> String {
    if let Some(get) = ERROR_NAME.get() {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: a valid output; the driver writes a static string or
        // fails for a code it does not know.
        if unsafe { get(code, &mut name) } == 0 && !name.is_null() {
            // SAFETY: the driver's NUL-terminated, static string.
            return unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        }
    }
    known_name(code).unwrap_or("unknown CUDA error").to_string()
}

/// A driver call's error code as a failure of `what`.
pub(crate) fn cuda_failure(what: &str, code: CUresult) -> Failure {
    let why = match code {
        CUDA_ERROR_NOT_PERMITTED => {
            ": called from inside a host function, where the CUDA driver takes no call (it runs host \
             functions on a thread of its own)"
        }
        _ => "",
    };
    Failure::new(status_of(code), format!("{what}: CUDA error {code} ({}){why}", error_name(code)))
}

/// `cuLaunchHostFunc`'s rule: no CUDA call from inside the function.
const CUDA_ERROR_NOT_PERMITTED: CUresult = 800;

/// A driver call's result: Ok for `CUDA_SUCCESS`, else its failure.
pub(crate) fn check(what: &str, code: CUresult) -> CuResult<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(cuda_failure(what, code))
    }
}

/// Runs a table entry's body inside the panic boundary.
pub(crate) fn entry(body: impl FnOnce() -> CuResult<()>) -> xdal_status_raw {
    xdal_backend_support::entry("CUDA", body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xdal_status::*;

    #[test]
    fn codes_map_to_the_statuses_the_abi_gives_them() {
        assert_eq!(status_of(1), XDAL_ERROR_INVALID_VALUE);
        assert_eq!(status_of(2), XDAL_ERROR_OUT_OF_MEMORY);
        assert_eq!(status_of(100), XDAL_ERROR_BACKEND_UNAVAILABLE);
        assert_eq!(status_of(101), XDAL_ERROR_INVALID_DEVICE);
        assert_eq!(status_of(218), XDAL_ERROR_INVALID_VALUE, "a module that is not PTX the driver takes");
        assert_eq!(status_of(500), XDAL_ERROR_NOT_FOUND, "a kernel name");
        assert_eq!(status_of(600), XDAL_ERROR_NOT_READY);
        assert_eq!(status_of(701), XDAL_ERROR_LAUNCH_FAILED, "out of resources for a launch");
        assert_eq!(status_of(801), XDAL_ERROR_NOT_SUPPORTED);
        assert_eq!(status_of(800), XDAL_ERROR_NOT_SUPPORTED, "a call from inside a host function");
        assert_eq!(status_of(12345), XDAL_ERROR_LAUNCH_FAILED);
    }

    #[test]
    fn a_faulting_kernel_loses_the_device() {
        for code in [700, 710, 714, 715, 716, 717, 718, 719] {
            assert!(is_context_fatal(code), "{code}");
            assert_eq!(status_of(code), XDAL_ERROR_DEVICE_LOST, "{code}");
        }
        for code in [1, 2, 600, 701, 704] {
            assert!(!is_context_fatal(code), "{code}");
        }
    }

    #[test]
    fn messages_name_the_call_the_code_and_its_cuda_name() {
        let f = cuda_failure("cuMemAlloc_v2", 2);
        assert_eq!(f.status, XDAL_ERROR_OUT_OF_MEMORY);
        assert_eq!(f.message, "cuMemAlloc_v2: CUDA error 2 (CUDA_ERROR_OUT_OF_MEMORY)");
        let f = cuda_failure("cuStreamQuery", 700);
        assert!(f.message.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{}", f.message);
        assert!(cuda_failure("x", 4242).message.contains("4242 (unknown CUDA error)"));
        let f = cuda_failure("cuMemFreeAsync", 800);
        assert!(f.message.contains("CUDA_ERROR_NOT_PERMITTED") && f.message.contains("host function"), "{}", f.message);
        assert_eq!(check("x", 0), Ok(()));
        assert_eq!(check("x", 600).unwrap_err().status, XDAL_ERROR_NOT_READY);
    }
}
