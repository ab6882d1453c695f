//! The CUDA driver API, opened at run time: only the entry points this
//! backend calls, each with a hand-written C signature.
//!
//! `libcuda.so.1` (or `XDAL_CUDA_DRIVER`) is opened with dlopen, so that
//! building needs no CUDA and a machine without a driver gets a status, not
//! a loader error. Entry points whose ABI changed over the driver's life
//! (`cuMemAlloc` became `cuMemAlloc_v2`, ...) are asked of
//! `cuGetProcAddress` for the version this file is written against,
//! `REQUIRED_VERSION`, so the driver hands out the variant of that version
//! whatever it is; a driver without `cuGetProcAddress` is searched by the
//! versioned symbol names instead.
use crate::error::{cuda_failure, set_error_name_source, ErrorName};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};

/// A driver call's result: `CUDA_SUCCESS` (0) or an error code.
pub(crate) type CUresult = c_int;
/// A device ordinal's handle (`cuDeviceGet`).
pub(crate) type CUdevice = c_int;
/// A device address.
pub(crate) type CUdeviceptr = u64;
pub(crate) type CUcontext = *mut c_void;
pub(crate) type CUstream = *mut c_void;
pub(crate) type CUevent = *mut c_void;
pub(crate) type CUmodule = *mut c_void;
pub(crate) type CUfunction = *mut c_void;
pub(crate) type CUgraph = *mut c_void;
pub(crate) type CUgraphNode = *mut c_void;
pub(crate) type CUgraphExec = *mut c_void;
/// `CUhostFn`: the same C signature as `xdal_host_fn_t`.
pub(crate) type CUhostFn = Option<unsafe extern "C" fn(*mut c_void)>;

pub(crate) const CUDA_SUCCESS: CUresult = 0;
pub(crate) const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
pub(crate) const CUDA_ERROR_NO_DEVICE: CUresult = 100;
pub(crate) const CUDA_ERROR_NOT_FOUND: CUresult = 500;
pub(crate) const CUDA_ERROR_NOT_READY: CUresult = 600;
pub(crate) const CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;
pub(crate) const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: CUresult = 704;

/// The driver version every signature here is written for: CUDA 12.0
/// (`cuDriverGetVersion`'s 12000). It brought `cuGetProcAddress_v2`, and
/// every entry point used here exists in it (stream-ordered allocation came
/// in 11.2, `cuLaunchHostFunc` in 10.0); `cuFuncGetParamInfo` (12.4) is
/// optional.
pub(crate) const REQUIRED_VERSION: c_int = 12000;

/// `CU_GET_PROC_ADDRESS_LEGACY_STREAM`: entry points whose NULL stream is
/// the legacy default stream, as a C program built without
/// `--default-stream per-thread` gets them.
const CU_GET_PROC_ADDRESS_LEGACY_STREAM: u64 = 1;

pub(crate) const CU_STREAM_NON_BLOCKING: c_uint = 1;
pub(crate) const CU_EVENT_DISABLE_TIMING: c_uint = 2;
pub(crate) const CU_MEMHOSTALLOC_PORTABLE: c_uint = 1;
pub(crate) const CU_MEMHOSTALLOC_DEVICEMAP: c_uint = 2;
pub(crate) const CU_POINTER_ATTRIBUTE_MEMORY_TYPE: c_int = 2;
pub(crate) const CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: c_int = 9;
pub(crate) const CU_MEMORYTYPE_DEVICE: c_uint = 2;
/// A unified address: the driver finds whose memory it is.
pub(crate) const CU_MEMORYTYPE_UNIFIED: c_uint = 4;

/// `CUDA_KERNEL_NODE_PARAMS_v2` (CUDA 12.0's `CUDA_KERNEL_NODE_PARAMS`).
#[repr(C)]
pub(crate) struct KernelNodeParams {
    pub func: CUfunction,
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_mem_bytes: c_uint,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
    /// `CUkernel`: NULL, `func` is used.
    pub kern: *mut c_void,
    /// NULL: the current context.
    pub ctx: CUcontext,
}

/// `CUDA_MEMCPY3D`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct Memcpy3d {
    pub src_x_in_bytes: usize,
    pub src_y: usize,
    pub src_z: usize,
    pub src_lod: usize,
    pub src_memory_type: c_uint,
    pub src_host: usize,
    pub src_device: CUdeviceptr,
    pub src_array: usize,
    pub reserved0: usize,
    pub src_pitch: usize,
    pub src_height: usize,
    pub dst_x_in_bytes: usize,
    pub dst_y: usize,
    pub dst_z: usize,
    pub dst_lod: usize,
    pub dst_memory_type: c_uint,
    pub dst_host: usize,
    pub dst_device: CUdeviceptr,
    pub dst_array: usize,
    pub reserved1: usize,
    pub dst_pitch: usize,
    pub dst_height: usize,
    pub width_in_bytes: usize,
    pub height: usize,
    pub depth: usize,
}

/// `CUDA_MEMSET_NODE_PARAMS`.
#[repr(C)]
pub(crate) struct MemsetNodeParams {
    pub dst: CUdeviceptr,
    pub pitch: usize,
    pub value: c_uint,
    pub element_size: c_uint,
    pub width: usize,
    pub height: usize,
}

/// `CUDA_HOST_NODE_PARAMS`.
#[repr(C)]
pub(crate) struct HostNodeParams {
    pub func: CUhostFn,
    pub user_data: *mut c_void,
}

/// `CUdevice_attribute` values read for the device properties.
pub(crate) mod attribute {
    use std::ffi::c_int;
    pub const MAX_THREADS_PER_BLOCK: c_int = 1;
    pub const MAX_BLOCK_DIM_X: c_int = 2;
    pub const MAX_GRID_DIM_X: c_int = 5;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
    pub const WARP_SIZE: c_int = 10;
    pub const MULTIPROCESSOR_COUNT: c_int = 16;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    pub const MEMORY_POOLS_SUPPORTED: c_int = 115;
}

/// Declares the table of entry points (`cuInit` and `cuDeviceGetCount`,
/// called before the rest is looked up, are found by `Driver::open`): each field's C signature, the name
/// `cuGetProcAddress` knows it by, and the versioned symbol dlsym finds.
macro_rules! entry_points {
    ($( $field:ident = $name:literal / $symbol:literal : fn($($arg:ty),* $(,)?); )*) => {
        /// The driver's entry points this backend calls.
        pub(crate) struct Api {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> CUresult, )*
        }

        impl Api {
            fn resolve(lookup: &Lookup) -> Result<Api, String> {
                // SAFETY: each signature is the driver's for REQUIRED_VERSION,
                // which `lookup` asks for.
                Ok(Api { $( $field: unsafe { lookup.find($name, $symbol)? }, )* })
            }
        }
    };
}

entry_points! {
    device_get = "cuDeviceGet" / "cuDeviceGet": fn(*mut CUdevice, c_int);
    device_get_name = "cuDeviceGetName" / "cuDeviceGetName": fn(*mut c_char, c_int, CUdevice);
    device_total_mem = "cuDeviceTotalMem" / "cuDeviceTotalMem_v2": fn(*mut usize, CUdevice);
    device_get_attribute = "cuDeviceGetAttribute" / "cuDeviceGetAttribute": fn(*mut c_int, c_int, CUdevice);
    device_can_access_peer = "cuDeviceCanAccessPeer" / "cuDeviceCanAccessPeer": fn(*mut c_int, CUdevice, CUdevice);
    primary_ctx_retain = "cuDevicePrimaryCtxRetain" / "cuDevicePrimaryCtxRetain": fn(*mut CUcontext, CUdevice);
    ctx_get_current = "cuCtxGetCurrent" / "cuCtxGetCurrent": fn(*mut CUcontext);
    ctx_set_current = "cuCtxSetCurrent" / "cuCtxSetCurrent": fn(CUcontext);
    ctx_synchronize = "cuCtxSynchronize" / "cuCtxSynchronize": fn();
    ctx_get_stream_priority_range = "cuCtxGetStreamPriorityRange" / "cuCtxGetStreamPriorityRange":
        fn(*mut c_int, *mut c_int);
    ctx_enable_peer_access = "cuCtxEnablePeerAccess" / "cuCtxEnablePeerAccess": fn(CUcontext, c_uint);
    mem_get_info = "cuMemGetInfo" / "cuMemGetInfo_v2": fn(*mut usize, *mut usize);
    mem_alloc = "cuMemAlloc" / "cuMemAlloc_v2": fn(*mut CUdeviceptr, usize);
    mem_free = "cuMemFree" / "cuMemFree_v2": fn(CUdeviceptr);
    mem_alloc_async = "cuMemAllocAsync" / "cuMemAllocAsync": fn(*mut CUdeviceptr, usize, CUstream);
    mem_free_async = "cuMemFreeAsync" / "cuMemFreeAsync": fn(CUdeviceptr, CUstream);
    mem_host_alloc = "cuMemHostAlloc" / "cuMemHostAlloc": fn(*mut *mut c_void, usize, c_uint);
    mem_free_host = "cuMemFreeHost" / "cuMemFreeHost": fn(*mut c_void);
    pointer_get_attributes = "cuPointerGetAttributes" / "cuPointerGetAttributes":
        fn(c_uint, *const c_int, *mut *mut c_void, CUdeviceptr);
    memcpy = "cuMemcpy" / "cuMemcpy": fn(CUdeviceptr, CUdeviceptr, usize);
    memcpy_async = "cuMemcpyAsync" / "cuMemcpyAsync": fn(CUdeviceptr, CUdeviceptr, usize, CUstream);
    memcpy_peer_async = "cuMemcpyPeerAsync" / "cuMemcpyPeerAsync":
        fn(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize, CUstream);
    memset_d8 = "cuMemsetD8" / "cuMemsetD8_v2": fn(CUdeviceptr, u8, usize);
    memset_d8_async = "cuMemsetD8Async" / "cuMemsetD8Async": fn(CUdeviceptr, u8, usize, CUstream);
    stream_create_with_priority = "cuStreamCreateWithPriority" / "cuStreamCreateWithPriority":
        fn(*mut CUstream, c_uint, c_int);
    stream_destroy = "cuStreamDestroy" / "cuStreamDestroy_v2": fn(CUstream);
    stream_query = "cuStreamQuery" / "cuStreamQuery": fn(CUstream);
    stream_synchronize = "cuStreamSynchronize" / "cuStreamSynchronize": fn(CUstream);
    stream_wait_event = "cuStreamWaitEvent" / "cuStreamWaitEvent": fn(CUstream, CUevent, c_uint);
    launch_host_func = "cuLaunchHostFunc" / "cuLaunchHostFunc": fn(CUstream, CUhostFn, *mut c_void);
    event_create = "cuEventCreate" / "cuEventCreate": fn(*mut CUevent, c_uint);
    event_destroy = "cuEventDestroy" / "cuEventDestroy_v2": fn(CUevent);
    event_record = "cuEventRecord" / "cuEventRecord": fn(CUevent, CUstream);
    event_query = "cuEventQuery" / "cuEventQuery": fn(CUevent);
    event_synchronize = "cuEventSynchronize" / "cuEventSynchronize": fn(CUevent);
    event_elapsed_time = "cuEventElapsedTime" / "cuEventElapsedTime": fn(*mut f32, CUevent, CUevent);
    module_load_data = "cuModuleLoadData" / "cuModuleLoadData": fn(*mut CUmodule, *const c_void);
    module_unload = "cuModuleUnload" / "cuModuleUnload": fn(CUmodule);
    module_get_function = "cuModuleGetFunction" / "cuModuleGetFunction": fn(*mut CUfunction, CUmodule, *const c_char);
    launch_kernel = "cuLaunchKernel" / "cuLaunchKernel": fn(
        CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void,
    );
}

/// Declares a group of entry points the backend uses only where the driver
/// has every one of them: `resolve` gives None if one is missing.
macro_rules! optional_entry_points {
    ($group:ident { $( $field:ident = $name:literal / $symbol:literal : fn($($arg:ty),* $(,)?); )* }) => {
        /// Driver entry points used only where the driver has them all.
        pub(crate) struct $group {
            $( pub $field: unsafe extern "C" fn($($arg),*) -> CUresult, )*
        }

        impl $group {
            fn resolve(lookup: &Lookup) -> Option<$group> {
                // SAFETY: each signature is the driver's for REQUIRED_VERSION,
                // which `lookup` asks for.
                Some($group { $( $field: unsafe { lookup.optional($name, $symbol)? }, )* })
            }
        }
    };
}

optional_entry_points! {
    GraphApi {
        graph_create = "cuGraphCreate" / "cuGraphCreate": fn(*mut CUgraph, c_uint);
        graph_destroy = "cuGraphDestroy" / "cuGraphDestroy": fn(CUgraph);
        add_empty_node = "cuGraphAddEmptyNode" / "cuGraphAddEmptyNode":
            fn(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize);
        add_kernel_node = "cuGraphAddKernelNode" / "cuGraphAddKernelNode_v2":
            fn(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const KernelNodeParams);
        add_memcpy_node = "cuGraphAddMemcpyNode" / "cuGraphAddMemcpyNode":
            fn(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const Memcpy3d, CUcontext);
        add_memset_node = "cuGraphAddMemsetNode" / "cuGraphAddMemsetNode":
            fn(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const MemsetNodeParams, CUcontext);
        add_host_node = "cuGraphAddHostNode" / "cuGraphAddHostNode":
            fn(*mut CUgraphNode, CUgraph, *const CUgraphNode, usize, *const HostNodeParams);
        instantiate = "cuGraphInstantiateWithFlags" / "cuGraphInstantiateWithFlags": fn(*mut CUgraphExec, CUgraph, u64);
        launch = "cuGraphLaunch" / "cuGraphLaunch": fn(CUgraphExec, CUstream);
        exec_destroy = "cuGraphExecDestroy" / "cuGraphExecDestroy": fn(CUgraphExec);
    }
}

/// `cuFuncGetParamInfo(func, index, &offset, &size)`: CUDA 12.4 and later.
pub(crate) type FuncGetParamInfo = unsafe extern "C" fn(CUfunction, usize, *mut usize, *mut usize) -> CUresult;

type DriverGetVersion = unsafe extern "C" fn(*mut c_int) -> CUresult;
type GetProcAddressV2 = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CUresult;
type GetProcAddressV1 = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> CUresult;

/// The opened driver.
pub(crate) struct Driver {
    pub api: Api,
    /// None where the driver predates 12.4: launches are then not checked
    /// against the kernel's parameter layout (there is no other way to learn
    /// it from a loaded module).
    pub func_get_param_info: Option<FuncGetParamInfo>,
    /// The graph API; None where the driver lacks part of it: the front
    /// then replays graphs node by node.
    pub graph: Option<GraphApi>,
    /// `cuDriverGetVersion`'s answer, e.g. 12040.
    pub version: c_int,
    /// The number of devices `cuDeviceGetCount` reported (at least 1).
    pub device_count: usize,
}

/// A driver version number as CUDA writes it: 12040 is "12.4".
pub(crate) fn version_text(version: c_int) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

/// The message for a driver library that cannot be opened.
pub(crate) fn missing_library(path: &str, why: &str) -> String {
    format!(
        "the CUDA driver library {path} could not be loaded ({why}): install the NVIDIA driver (which provides \
         libcuda.so.1), or name the library with XDAL_CUDA_DRIVER"
    )
}

/// The message for a driver older than `REQUIRED_VERSION`.
pub(crate) fn too_old(path: &str, version: c_int) -> String {
    format!(
        "the CUDA driver {path} is too old: version {} ({version}); the CUDA backend needs {} ({REQUIRED_VERSION}) \
         or newer",
        version_text(version),
        version_text(REQUIRED_VERSION)
    )
}

/// Where `CUDA_VISIBLE_DEVICES` is set, a note that it may hide devices.
fn visible_devices_hint() -> String {
    std::env::var("CUDA_VISIBLE_DEVICES")
        .map_or(String::new(), |v| format!(" (CUDA_VISIBLE_DEVICES={v:?} may hide them)"))
}

impl Driver {
    /// Opens the driver at `path`, checks its version, initialises it and
    /// counts its devices; the error says what is missing.
    pub fn open(path: &str) -> Result<Driver, String> {
        if let Some(why) = xdal_backend_support::user_path::not_a_library_file(path) {
            return Err(missing_library(path, &why));
        }
        // SAFETY: loading runs the library's initialisers; a CUDA driver's
        // (or the stub's) are safe to run in any process.
        let library = unsafe { Library::new(path) }.map_err(|e| missing_library(path, &e.to_string()))?;
        // Kept for the life of the process (the backend starts once), so
        // that every entry point taken from it stays valid, even after a
        // start that failed: `cuGetErrorName` may have been handed out.
        let library: &'static Library = Box::leak(Box::new(library));
        let lookup = Lookup::new(library, path);
        // SAFETY: the driver's signatures, as declared.
        let get_version: DriverGetVersion = unsafe { lookup.symbol("cuDriverGetVersion") }
            .ok_or_else(|| format!("{path} is not a CUDA driver: it has no cuDriverGetVersion"))?;
        // SAFETY: as above; cuGetErrorName's signature is `ErrorName`'s.
        if let Some(name) = unsafe { lookup.symbol::<ErrorName>("cuGetErrorName") } {
            set_error_name_source(name);
        }
        let mut version = 0;
        // SAFETY: a valid output; the call needs no initialisation.
        let code = unsafe { get_version(&mut version) };
        if code != CUDA_SUCCESS {
            return Err(cuda_failure("cuDriverGetVersion", code).into_message());
        }
        if version < REQUIRED_VERSION {
            return Err(too_old(path, version));
        }
        // SAFETY: the signatures of REQUIRED_VERSION, which lookup asks for.
        let init: unsafe extern "C" fn(c_uint) -> CUresult = unsafe { lookup.find("cuInit", "cuInit")? };
        // SAFETY: flags must be 0.
        let code = unsafe { init(0) };
        if code != CUDA_SUCCESS {
            let hint = if code == CUDA_ERROR_NO_DEVICE { visible_devices_hint() } else { String::new() };
            return Err(format!(
                "the CUDA driver {path} did not start: {}{hint}",
                cuda_failure("cuInit", code).message
            ));
        }
        // SAFETY: as above.
        let get_count: unsafe extern "C" fn(*mut c_int) -> CUresult =
            unsafe { lookup.find("cuDeviceGetCount", "cuDeviceGetCount")? };
        let mut count = 0;
        // SAFETY: a valid output; the driver is initialised.
        let code = unsafe { get_count(&mut count) };
        if code != CUDA_SUCCESS {
            return Err(cuda_failure("cuDeviceGetCount", code).into_message());
        }
        if count <= 0 {
            let hint = visible_devices_hint();
            return Err(format!("the CUDA driver {path} (version {}) sees no device{hint}", version_text(version)));
        }
        let api = Api::resolve(&lookup)?;
        // SAFETY: cuFuncGetParamInfo's signature, where the driver has it.
        let func_get_param_info =
            unsafe { lookup.optional::<FuncGetParamInfo>("cuFuncGetParamInfo", "cuFuncGetParamInfo") };
        let graph = GraphApi::resolve(&lookup);
        Ok(Driver { api, func_get_param_info, graph, version, device_count: count as usize })
    }
}

/// Finds entry points: through `cuGetProcAddress` where the driver has it,
/// else by symbol name.
struct Lookup<'a> {
    library: &'a Library,
    path: &'a str,
    proc_address: ProcAddress,
}

enum ProcAddress {
    V2(GetProcAddressV2),
    V1(GetProcAddressV1),
    None,
}

impl<'a> Lookup<'a> {
    fn new(library: &'a Library, path: &'a str) -> Self {
        let mut lookup = Lookup { library, path, proc_address: ProcAddress::None };
        // SAFETY: the signatures of the two forms, as the driver declares them.
        lookup.proc_address = match unsafe { lookup.symbol::<GetProcAddressV2>("cuGetProcAddress_v2") } {
            Some(v2) => ProcAddress::V2(v2),
            // SAFETY: as above.
            None => match unsafe { lookup.symbol::<GetProcAddressV1>("cuGetProcAddress") } {
                Some(v1) => ProcAddress::V1(v1),
                None => ProcAddress::None,
            },
        };
        lookup
    }

    /// The symbol `name` of the library as an `F`.
    ///
    /// # Safety
    /// `F` must be the symbol's C function pointer type.
    unsafe fn symbol<F: Copy>(&self, name: &str) -> Option<F> {
        let name = CString::new(name).ok()?;
        // SAFETY: per the contract, F is the symbol's type.
        let symbol = unsafe { self.library.get::<F>(name.as_bytes_with_nul()) }.ok()?;
        Some(*symbol)
    }

    /// The entry point `name` of `REQUIRED_VERSION`, from `cuGetProcAddress`,
    /// else the symbol `versioned`; None where the driver has neither.
    ///
    /// # Safety
    /// `F` must be the entry point's C function pointer type.
    unsafe fn optional<F: Copy>(&self, name: &str, versioned: &str) -> Option<F> {
        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>(), "a function pointer");
        let c_name = CString::new(name).ok()?;
        let mut found: *mut c_void = std::ptr::null_mut();
        let code = match self.proc_address {
            // SAFETY: a NUL-terminated name and a valid output.
            ProcAddress::V2(get) => unsafe {
                let mut status = 0;
                get(c_name.as_ptr(), &mut found, REQUIRED_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &mut status)
            },
            // SAFETY: as above.
            ProcAddress::V1(get) => unsafe {
                get(c_name.as_ptr(), &mut found, REQUIRED_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM)
            },
            ProcAddress::None => CUDA_ERROR_NOT_FOUND,
        };
        if code == CUDA_SUCCESS && !found.is_null() {
            // SAFETY: F is a function pointer type (asserted above) of the
            // entry point's signature, per the contract.
            return Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&found) });
        }
        // SAFETY: per the contract.
        unsafe { self.symbol(versioned) }
    }

    /// As `optional`, with a missing entry point an error naming it.
    ///
    /// # Safety
    /// As for `optional`.
    unsafe fn find<F: Copy>(&self, name: &str, versioned: &str) -> Result<F, String> {
        // SAFETY: per the contract.
        unsafe { self.optional(name, versioned) }.ok_or_else(|| {
            format!(
                "the CUDA driver {} lacks {versioned} (needed by the CUDA backend, which needs driver {} or newer)",
                self.path,
                version_text(REQUIRED_VERSION)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_cuda_writes_them() {
        assert_eq!(version_text(12040), "12.4");
        assert_eq!(version_text(11080), "11.8");
        assert_eq!(version_text(REQUIRED_VERSION), "12.0");
    }

    #[test]
    fn a_missing_library_is_named_with_what_to_do() {
        let err = Driver::open("/no-such-dir/libcuda.so.1").err().expect("no such library");
        assert!(err.contains("/no-such-dir/libcuda.so.1"), "{err}");
        assert!(err.contains("could not be loaded") && err.contains("XDAL_CUDA_DRIVER"), "{err}");
    }

    #[test]
    fn a_library_that_is_not_a_driver_is_refused() {
        // Any shared library without cuDriverGetVersion: the C library.
        let err = Driver::open("libc.so.6").err().expect("libc is no CUDA driver");
        assert!(err.contains("is not a CUDA driver") && err.contains("cuDriverGetVersion"), "{err}");
    }

    #[test]
    fn an_old_driver_is_refused_with_both_versions() {
        let err = too_old("libcuda.so.1", 11080);
        assert!(err.contains("too old") && err.contains("11.8 (11080)") && err.contains("12.0 (12000)"), "{err}");
    }
}
