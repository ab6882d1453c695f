//! User modules on the OpenCL backend, through its table as the front
//! calls it: OpenCL C source and program binaries, SVM pointer, value and
//! `__local` parameters, and each way a module or launch is refused.
use std::ffi::{c_int, c_void, CStr};
use xdal_abi::*;

const SOURCE: &str = r#"
__kernel void scale(__global float *x, ulong n, float factor, __local float *scratch) {
  size_t i = get_global_id(0);
  scratch[get_local_id(0)] = i < n ? x[i] * factor : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < n) x[i] = scratch[get_local_id(0)];
}
"#;

fn table() -> &'static xdal_backend_v1_t {
    let mut table = std::ptr::null();
    // SAFETY: a valid output pointer.
    let status =
        unsafe { xdal_opencl::xdal_opencl_backend_get_v1(XDAL_ABI_VERSION_MAJOR, XDAL_ABI_VERSION_MINOR, &mut table) };
    assert_eq!(status, 0);
    // SAFETY: the getter hands out a static table.
    let table = unsafe { &*table };
    let mut count: c_int = 0;
    // SAFETY: a valid output pointer.
    assert_eq!(unsafe { table.device_get_count.unwrap()(&mut count) }, 0, "no OpenCL device with SVM");
    table
}

fn message(t: &xdal_backend_v1_t) -> String {
    // SAFETY: the backend's thread-local message, NUL-terminated.
    unsafe { CStr::from_ptr(t.last_error_message.unwrap()()) }.to_string_lossy().into_owned()
}

fn load_data(t: &xdal_backend_v1_t, image: &[u8]) -> Result<xdal_backend_module_t, (xdal_status_raw, String)> {
    let mut module = std::ptr::null_mut();
    // SAFETY: `image` is readable; a valid output pointer.
    match unsafe { t.module_load_data.unwrap()(image.as_ptr() as *const c_void, image.len(), &mut module) } {
        0 => Ok(module),
        status => Err((status, message(t))),
    }
}

fn function(t: &xdal_backend_v1_t, module: xdal_backend_module_t, name: &CStr) -> Result<xdal_backend_function_t, i32> {
    let mut f = std::ptr::null_mut();
    // SAFETY: a live module, a C string, a valid output pointer.
    match unsafe { t.module_get_function.unwrap()(module, name.as_ptr(), &mut f) } {
        0 => Ok(f),
        status => Err(status),
    }
}

struct Buffer<'t> {
    t: &'t xdal_backend_v1_t,
    ptr: *mut c_void,
}

impl<'t> Buffer<'t> {
    fn new(t: &'t xdal_backend_v1_t, values: &[f32]) -> Buffer<'t> {
        let mut ptr = std::ptr::null_mut();
        let bytes = std::mem::size_of_val(values);
        // SAFETY: valid arguments; the copy reads `bytes` from `values`.
        unsafe {
            assert_eq!(t.mem_alloc.unwrap()(0, bytes, &mut ptr), 0);
            let kind = xdal_memcpy_kind::XDAL_MEMCPY_HOST_TO_DEVICE;
            assert_eq!(t.mem_copy.unwrap()(ptr, values.as_ptr() as *const c_void, bytes, kind), 0);
        }
        Buffer { t, ptr }
    }

    fn read(&self, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; n];
        let kind = xdal_memcpy_kind::XDAL_MEMCPY_DEVICE_TO_HOST;
        // SAFETY: the buffer holds at least `n` floats.
        let status = unsafe { self.t.mem_copy.unwrap()(out.as_mut_ptr() as *mut c_void, self.ptr, n * 4, kind) };
        assert_eq!(status, 0);
        out
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        // SAFETY: a live allocation of device 0.
        unsafe { self.t.mem_free.unwrap()(0, self.ptr) };
    }
}

fn stream(t: &xdal_backend_v1_t) -> xdal_backend_stream_t {
    let mut s = std::ptr::null_mut();
    // SAFETY: device 0 exists; a valid output pointer.
    assert_eq!(unsafe { t.stream_create.unwrap()(0, 0, 0, &mut s) }, 0);
    s
}

fn arg<T>(value: &T) -> xdal_kernel_arg_t {
    xdal_kernel_arg_t { value: value as *const T as *const c_void, size: std::mem::size_of::<T>() }
}

fn dim(x: u32) -> xdal_dim3_t {
    xdal_dim3_t { x, y: 1, z: 1 }
}

/// Launches `scale` over `n` floats in blocks of 32 with `shared` bytes of
/// local memory.
fn launch_scale(
    t: &xdal_backend_v1_t,
    f: xdal_backend_function_t,
    s: xdal_backend_stream_t,
    args: &[xdal_kernel_arg_t],
    n: u32,
    shared: usize,
) -> i32 {
    // SAFETY: live handles; `args` is readable.
    unsafe { t.launch_kernel.unwrap()(f, dim(n.div_ceil(32)), dim(32), shared, s, args.as_ptr(), args.len()) }
}

/// Releases what a test made.
fn release(t: &xdal_backend_v1_t, f: xdal_backend_function_t, module: xdal_backend_module_t, s: xdal_backend_stream_t) {
    // SAFETY: live handles, released once.
    unsafe {
        assert_eq!(t.function_release.unwrap()(f), 0);
        assert_eq!(t.module_unload.unwrap()(module), 0);
        assert_eq!(t.stream_destroy.unwrap()(s), 0);
    }
}

#[test]
fn a_module_from_opencl_c_runs_with_pointer_value_and_local_parameters() {
    let t = table();
    let module = load_data(t, SOURCE.as_bytes()).expect("the source builds");
    let f = function(t, module, c"scale").expect("the kernel exists");
    let values: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let x = Buffer::new(t, &values);
    let s = stream(t);
    let (n, factor) = (100u64, 2.5f32);
    let args = [arg(&x.ptr), arg(&n), arg(&factor)];
    assert_eq!(launch_scale(t, f, s, &args, 100, 32 * 4), 0, "{}", message(t));
    // SAFETY: a live stream.
    assert_eq!(unsafe { t.stream_synchronize.unwrap()(s) }, 0, "{}", message(t));
    let expected: Vec<f32> = values.iter().map(|v| v * 2.5).collect();
    assert_eq!(x.read(100), expected);
    release(t, f, module, s);
}

#[test]
fn launches_with_the_wrong_arguments_are_refused_and_the_stream_stays_usable() {
    let t = table();
    let module = load_data(t, SOURCE.as_bytes()).unwrap();
    let f = function(t, module, c"scale").unwrap();
    let x = Buffer::new(t, &[1.0; 32]);
    let s = stream(t);
    let (n, factor, wide) = (32u64, 3.0f32, 3.0f64);
    let invalid = xdal_status::XDAL_ERROR_INVALID_VALUE as i32;
    assert_eq!(launch_scale(t, f, s, &[arg(&x.ptr), arg(&n)], 32, 128), invalid, "too few");
    assert!(message(t).contains("takes 3 argument(s)"), "{}", message(t));
    assert_eq!(launch_scale(t, f, s, &[arg(&factor), arg(&n), arg(&factor)], 32, 128), invalid, "a 4-byte pointer");
    assert_eq!(launch_scale(t, f, s, &[arg(&x.ptr), arg(&n), arg(&wide)], 32, 128), invalid, "an 8-byte float");
    assert!(message(t).contains("argument 2"), "{}", message(t));
    assert_eq!(launch_scale(t, f, s, &[arg(&x.ptr), arg(&n), arg(&factor)], 32, 128), 0, "{}", message(t));
    // SAFETY: a live stream.
    assert_eq!(unsafe { t.stream_synchronize.unwrap()(s) }, 0);
    assert_eq!(x.read(32), vec![3.0; 32]);
    release(t, f, module, s);
}

#[test]
fn source_that_does_not_compile_is_invalid_value_with_the_compilers_log() {
    let t = table();
    let (status, text) = load_data(t, b"__kernel void broken(__global float *x) { x[0] = undeclared; }").unwrap_err();
    assert_eq!(status, xdal_status::XDAL_ERROR_INVALID_VALUE as i32);
    assert!(text.contains("does not build") && text.contains("undeclared"), "{text}");
}

#[test]
fn a_binary_the_runtime_does_not_know_is_invalid_value() {
    let t = table();
    let (status, text) = load_data(t, &[0x7f, b'E', b'L', b'F', 0, 1, 2, 3, 0xff, 0xfe]).unwrap_err();
    assert_eq!(status, xdal_status::XDAL_ERROR_INVALID_VALUE as i32);
    assert!(text.contains("not a program binary"), "{text}");
}

#[test]
fn a_kernel_the_module_lacks_is_not_found() {
    let t = table();
    let module = load_data(t, SOURCE.as_bytes()).unwrap();
    assert_eq!(function(t, module, c"missing"), Err(xdal_status::XDAL_ERROR_NOT_FOUND as i32));
    assert!(message(t).contains("\"missing\""), "{}", message(t));
    // SAFETY: a live module.
    unsafe { t.module_unload.unwrap()(module) };
}

#[test]
fn a_program_binary_loads_as_its_source_does() {
    let t = table();
    let binary = binary_of(SOURCE);
    let module = load_data(t, &binary).expect("the runtime's own binary loads");
    let f = function(t, module, c"scale").unwrap();
    let x = Buffer::new(t, &[2.0; 64]);
    let s = stream(t);
    let (n, factor) = (64u64, 0.5f32);
    assert_eq!(launch_scale(t, f, s, &[arg(&x.ptr), arg(&n), arg(&factor)], 64, 128), 0, "{}", message(t));
    // SAFETY: a live stream.
    assert_eq!(unsafe { t.stream_synchronize.unwrap()(s) }, 0);
    assert_eq!(x.read(64), vec![1.0; 64]);
    release(t, f, module, s);
}

#[test]
fn host_kernels_are_not_supported() {
    let t = table();
    unsafe extern "C" fn kernel(_: *const xdal_kernel_context_t, _: *const *mut c_void) -> xdal_status_raw {
        0
    }
    let mut f = std::ptr::null_mut();
    // SAFETY: a valid output pointer.
    let status = unsafe { t.function_from_host.unwrap()(Some(kernel), &mut f) };
    assert_eq!(status, xdal_status::XDAL_ERROR_NOT_SUPPORTED as i32);
    assert!(message(t).contains("runs no host code"), "{}", message(t));
}

/// The program binary the runtime makes of `source` for the first device,
/// as an application would get it with clGetProgramInfo.
fn binary_of(source: &str) -> Vec<u8> {
    use cl3::{context, device, platform, program};
    let platform = platform::get_platform_ids().unwrap()[0];
    let device = device::get_device_ids(platform, device::CL_DEVICE_TYPE_ALL).unwrap()[0];
    let context = context::create_context(&[device], std::ptr::null(), None, std::ptr::null_mut()).unwrap();
    let p = program::create_program_with_source(context, &[source]).unwrap();
    program::build_program(p, &[device], c"-cl-kernel-arg-info", None, std::ptr::null_mut()).unwrap();
    let binaries = program::get_program_info(p, program::CL_PROGRAM_BINARIES).unwrap();
    let cl3::info_type::InfoType::VecVecUchar(mut binaries) = binaries else {
        panic!("CL_PROGRAM_BINARIES is a list of byte arrays")
    };
    // SAFETY: objects made above, released once.
    unsafe {
        program::release_program(p).unwrap();
        context::release_context(context).unwrap();
    }
    binaries.swap_remove(0)
}

#[test]
fn pinned_host_memory_is_aligned_and_kernels_reach_it() {
    let t = table();
    let mut host = std::ptr::null_mut();
    // SAFETY: a valid output pointer.
    assert_eq!(unsafe { t.mem_alloc_host.unwrap()(64 * 4, &mut host) }, 0, "{}", message(t));
    // Page-aligned, as the front's own pinned memory is (the conformance suite
    // asks it of every backend).
    assert!(host as usize % 4096 == 0, "{host:?}");
    // SAFETY: 64 floats of host memory, this test's alone.
    let values = unsafe { std::slice::from_raw_parts_mut(host as *mut f32, 64) };
    values.fill(4.0);
    let module = load_data(t, SOURCE.as_bytes()).unwrap();
    let f = function(t, module, c"scale").unwrap();
    let s = stream(t);
    let (n, factor) = (64u64, 0.25f32);
    assert_eq!(launch_scale(t, f, s, &[arg(&host), arg(&n), arg(&factor)], 64, 128), 0, "{}", message(t));
    // SAFETY: a live stream.
    assert_eq!(unsafe { t.stream_synchronize.unwrap()(s) }, 0, "{}", message(t));
    assert_eq!(values, &[1.0; 64][..]);
    release(t, f, module, s);
    // SAFETY: allocated above, freed once.
    assert_eq!(unsafe { t.mem_free_host.unwrap()(host) }, 0);
}
