//! The CUDA backend beside the CUDA driver API called directly (run with
//! `XDAL_BACKEND=cuda`; the group says so and measures nothing on another
//! backend): the same operation through xdal's C ABI and through the
//! driver's entry points, opened by the bench itself from `libcuda.so.1`
//! as a C program linked with `-lcuda` calls them, on device 0's primary
//! context (the one the backend uses), in the same run.
//!
//! Kernel launches and 64-byte `memset_async` are ns per enqueue with the
//! stream held (a host function at its head, on both sides: the calls'
//! cost on the calling thread, not the GPU's pace), then as a batch waited
//! for once; copies are GB/s of 64 MiB blocking copies from and to pinned
//! host memory. Targets (issue 20): launch rate and copy bandwidth through
//! xdal at least 0.95x the direct calls'.
use crate::api::{arg, check, DeviceMem, Res, Stream, D2H, H2D, ONE};
use crate::gate::{gated_calls_in_runs, Gate};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Timing};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
use xdal::abi::{xdal_function_t, xdal_module_t};
use xdal::*;

const GROUP: &str = "CUDA backend vs the CUDA driver API";
const DIRECT: &str = "direct driver calls";

/// Calls held back by one gate: well inside the driver's queue of a
/// stream (on the order of a thousand commands; an enqueue onto a full one
/// waits for the device, which the gate holds).
const CALLS_PER_GATE: u64 = 256;

/// `touch(int *x, int v)`: thread 0 of block 0 writes `v` to `x[0]`. The
/// PTX NVRTC 12.0 writes for that one-line CUDA C++ kernel at
/// compute_80 (less its unused `nv::target` constants), the ISA and
/// target of the backend's own built-ins, so that the bench needs no
/// compiler; NUL-terminated, as `cuModuleLoadData` reads PTX.
const TOUCH_PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry touch(
\t.param .u64 touch_param_0,
\t.param .u32 touch_param_1
)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<5>;
\t.reg .b64 %rd<3>;

\tld.param.u64 %rd1, [touch_param_0];
\tld.param.u32 %r1, [touch_param_1];
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %tid.x;
\tor.b32 %r4, %r2, %r3;
\tsetp.ne.s32 %p1, %r4, 0;
\t@%p1 bra $L__BB0_2;
\tcvta.to.global.u64 %rd2, %rd1;
\tst.global.u32 [%rd2], %r1;
$L__BB0_2:
\tret;
}
\0";

type CuResult = c_int;
type CuDevicePtr = u64;
type Handle = *mut c_void;

/// The driver's entry points the reference calls, under the names
/// `cuda.h` maps its calls to (the `_v2` ones where it does).
struct Driver {
    _library: Library,
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut Handle, c_int) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(Handle) -> CuResult,
    stream_create: unsafe extern "C" fn(*mut Handle, c_uint) -> CuResult,
    stream_synchronize: unsafe extern "C" fn(Handle) -> CuResult,
    stream_destroy: unsafe extern "C" fn(Handle) -> CuResult,
    module_load_data: unsafe extern "C" fn(*mut Handle, *const c_void) -> CuResult,
    module_get_function: unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> CuResult,
    module_unload: unsafe extern "C" fn(Handle) -> CuResult,
    #[allow(clippy::type_complexity)]
    launch_kernel: unsafe extern "C" fn(
        Handle,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Handle,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult,
    launch_host_func: unsafe extern "C" fn(Handle, unsafe extern "C" fn(*mut c_void), *mut c_void) -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    memset_d8_async: unsafe extern "C" fn(CuDevicePtr, u8, usize, Handle) -> CuResult,
    mem_host_alloc: unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> CuResult,
    mem_free_host: unsafe extern "C" fn(*mut c_void) -> CuResult,
    memcpy_htod: unsafe extern "C" fn(CuDevicePtr, *const c_void, usize) -> CuResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize) -> CuResult,
    get_error_name: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
}

impl Driver {
    fn open() -> Res<Driver> {
        // SAFETY: loading the driver runs its initialisers, as linking
        // against it would.
        let library = unsafe { Library::new("libcuda.so.1") }.map_err(|e| format!("libcuda.so.1: {e}"))?;
        macro_rules! entry {
            ($name:literal) => {
                // SAFETY: the symbol is the driver's entry point of this
                // name, whose C signature the field's type spells.
                *unsafe { library.get($name) }
                    .map_err(|e| format!("{}: {e}", String::from_utf8_lossy(&$name[..$name.len() - 1])))?
            };
        }
        Ok(Driver {
            init: entry!(b"cuInit\0"),
            device_get: entry!(b"cuDeviceGet\0"),
            primary_ctx_retain: entry!(b"cuDevicePrimaryCtxRetain\0"),
            ctx_set_current: entry!(b"cuCtxSetCurrent\0"),
            stream_create: entry!(b"cuStreamCreate\0"),
            stream_synchronize: entry!(b"cuStreamSynchronize\0"),
            stream_destroy: entry!(b"cuStreamDestroy_v2\0"),
            module_load_data: entry!(b"cuModuleLoadData\0"),
            module_get_function: entry!(b"cuModuleGetFunction\0"),
            module_unload: entry!(b"cuModuleUnload\0"),
            launch_kernel: entry!(b"cuLaunchKernel\0"),
            launch_host_func: entry!(b"cuLaunchHostFunc\0"),
            mem_alloc: entry!(b"cuMemAlloc_v2\0"),
            mem_free: entry!(b"cuMemFree_v2\0"),
            memset_d8_async: entry!(b"cuMemsetD8Async\0"),
            mem_host_alloc: entry!(b"cuMemHostAlloc\0"),
            mem_free_host: entry!(b"cuMemFreeHost\0"),
            memcpy_htod: entry!(b"cuMemcpyHtoD_v2\0"),
            memcpy_dtoh: entry!(b"cuMemcpyDtoH_v2\0"),
            get_error_name: entry!(b"cuGetErrorName\0"),
            _library: library,
        })
    }

    /// `Ok` for CUDA_SUCCESS, else the call and the error's name.
    fn check(&self, result: CuResult, what: &str) -> Res<()> {
        if result == 0 {
            return Ok(());
        }
        let mut name: *const c_char = null();
        // SAFETY: a valid out-pointer; the driver's names are static strings.
        let named = unsafe { (self.get_error_name)(result, &mut name) } == 0 && !name.is_null();
        // SAFETY: a NUL-terminated static string when the call succeeded.
        let name = if named { unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned() } else { "?".into() };
        Err(format!("{what}: CUDA error {result} ({name})"))
    }
}

/// Device 0's primary context made current on this thread, a stream and
/// the `touch` kernel, all the driver's own.
struct Direct {
    cu: Driver,
    stream: Handle,
    module: Handle,
    kernel: Handle,
}

impl Direct {
    fn new() -> Res<Direct> {
        let cu = Driver::open()?;
        let (mut device, mut context, mut stream, mut module, mut kernel) =
            (0, null_mut(), null_mut(), null_mut(), null_mut());
        // SAFETY: valid out-pointers, handles the driver gave in the calls
        // before, and a NUL-terminated PTX, in each call below.
        unsafe {
            cu.check((cu.init)(0), "cuInit")?;
            cu.check((cu.device_get)(&mut device, 0), "cuDeviceGet")?;
            cu.check((cu.primary_ctx_retain)(&mut context, device), "cuDevicePrimaryCtxRetain")?;
            cu.check((cu.ctx_set_current)(context), "cuCtxSetCurrent")?;
            // Non-blocking, as xdal's streams are (no implicit
            // synchronization with the legacy default stream).
            cu.check((cu.stream_create)(&mut stream, 1), "cuStreamCreate")?;
            cu.check((cu.module_load_data)(&mut module, TOUCH_PTX.as_ptr().cast()), "cuModuleLoadData")?;
            cu.check((cu.module_get_function)(&mut kernel, module, c"touch".as_ptr()), "cuModuleGetFunction")?;
        }
        Ok(Direct { cu, stream, module, kernel })
    }

    fn sync(&self) -> Res<()> {
        // SAFETY: a live stream.
        self.cu.check(unsafe { (self.cu.stream_synchronize)(self.stream) }, "cuStreamSynchronize")
    }

    fn alloc(&self, size: usize) -> Res<CuDevicePtr> {
        let mut ptr = 0;
        // SAFETY: a valid out-pointer; the context is current.
        self.cu.check(unsafe { (self.cu.mem_alloc)(&mut ptr, size) }, "cuMemAlloc")?;
        Ok(ptr)
    }

    fn free(&self, ptr: CuDevicePtr) {
        // SAFETY: allocated by `alloc`, freed once, nothing pending on it.
        let _ = unsafe { (self.cu.mem_free)(ptr) };
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        // SAFETY: objects made in `new`, released once, the stream drained.
        unsafe {
            let _ = (self.cu.stream_synchronize)(self.stream);
            let _ = (self.cu.module_unload)(self.module);
            let _ = (self.cu.stream_destroy)(self.stream);
        }
    }
}

/// Pinned host memory from `cuMemHostAlloc`, freed on drop.
struct Pinned<'a> {
    direct: &'a Direct,
    ptr: *mut c_void,
}

impl<'a> Pinned<'a> {
    fn new(direct: &'a Direct, size: usize) -> Res<Pinned<'a>> {
        let mut ptr = null_mut();
        // SAFETY: a valid out-pointer; flags 0 (portable not needed).
        direct.cu.check(unsafe { (direct.cu.mem_host_alloc)(&mut ptr, size, 0) }, "cuMemHostAlloc")?;
        // SAFETY: `size` writable bytes just allocated.
        unsafe { ptr.cast::<u8>().write_bytes(0x33, size) };
        Ok(Pinned { direct, ptr })
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new`, freed once.
        let _ = unsafe { (self.direct.cu.mem_free_host)(self.ptr) };
    }
}

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    if crate::api::backend_name() != c"cuda" {
        eprint!(" (skipped: XDAL_BACKEND is not cuda)");
        return Ok(());
    }
    let direct = Direct::new()?;
    launches(timing, rows, &direct)?;
    fills(timing, rows, &direct)?;
    copies(timing, rows, &direct)
}

fn launches(timing: &Timing, rows: &mut Vec<Row>, direct: &Direct) -> Res<()> {
    let stream = Stream::new()?;
    let (mut module, mut function): (xdal_module_t, xdal_function_t) = (null_mut(), null_mut());
    check(xdal_module_load_data(&mut module, TOUCH_PTX.as_ptr().cast(), TOUCH_PTX.len()), "xdal_module_load_data")?;
    check(xdal_module_get_function(&mut function, module, c"touch".as_ptr()), "xdal_module_get_function")?;
    let mem = DeviceMem::new(256)?;
    let target = direct.alloc(256)?;
    let mut value = 7i32;
    let args = [arg(&mem.ptr), arg(&value)];
    let xdal_launch =
        || check(xdal_launch_kernel(function, ONE, ONE, 0, stream.0, args.as_ptr(), args.len()), "xdal_launch_kernel");
    let mut target_arg = target;
    let direct_launch = || {
        let mut params = [(&raw mut target_arg).cast::<c_void>(), (&raw mut value).cast::<c_void>()];
        // SAFETY: a live kernel of two parameters, a u64 device address
        // and an int, pointed at by `params`; a live stream.
        let launched = unsafe {
            (direct.cu.launch_kernel)(
                direct.kernel,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                direct.stream,
                params.as_mut_ptr(),
                null_mut(),
            )
        };
        direct.cu.check(launched, "cuLaunchKernel")
    };
    enqueue_rows(timing, rows, "kernel launch (1 thread)", &stream, direct, xdal_launch, direct_launch)?;
    check(xdal_module_unload(module), "xdal_module_unload")?;
    direct.free(target);
    Ok(())
}

fn fills(timing: &Timing, rows: &mut Vec<Row>, direct: &Direct) -> Res<()> {
    let stream = Stream::new()?;
    let mem = DeviceMem::new(64)?;
    let target = direct.alloc(64)?;
    let xdal_fill = || check(xdal_memset_async(mem.ptr, 1, 64, stream.0), "xdal_memset_async");
    // SAFETY: 64 bytes of device memory of the current context; a live stream.
    let direct_fill =
        || direct.cu.check(unsafe { (direct.cu.memset_d8_async)(target, 1, 64, direct.stream) }, "cuMemsetD8Async");
    enqueue_rows(timing, rows, "memset_async 64 B", &stream, direct, xdal_fill, direct_fill)?;
    direct.free(target);
    Ok(())
}

/// Two rows for one command, through xdal and direct: the enqueue rate,
/// the calls timed while a host function holds the stream on both sides
/// (with the target), and a batch then its wait (shown without one).
fn enqueue_rows(
    timing: &Timing,
    rows: &mut Vec<Row>,
    what: &str,
    stream: &Stream,
    direct: &Direct,
    mut xdal_call: impl FnMut() -> Res<()>,
    mut direct_call: impl FnMut() -> Res<()>,
) -> Res<()> {
    let s = stream.0;
    let direct_gate = || {
        Gate::new(|wait| {
            // SAFETY: a live stream; the function takes no data.
            direct
                .cu
                .check(unsafe { (direct.cu.launch_host_func)(direct.stream, wait, null_mut()) }, "cuLaunchHostFunc")
        })
    };
    let (xdal, reference) = timing.measure_pair(
        |n| gated_calls_in_runs(n, CALLS_PER_GATE, &mut xdal_call, || Gate::front(s), || stream.sync()),
        |n| gated_calls_in_runs(n, CALLS_PER_GATE, &mut direct_call, direct_gate, || direct.sync()),
    )?;
    rows.push(
        Row::new(GROUP, format!("{what}, enqueue with the stream held"), Unit::NsPerOp, &xdal)
            .vs(DIRECT, &reference)
            .goal(Goal::RatioAtMost(1.0 / 0.95)),
    );
    let (xdal, reference) = timing.measure_pair(
        |n| {
            timed(|| {
                (0..n).try_for_each(|_| xdal_call())?;
                stream.sync()
            })
        },
        |n| {
            timed(|| {
                (0..n).try_for_each(|_| direct_call())?;
                direct.sync()
            })
        },
    )?;
    rows.push(Row::new(GROUP, format!("{what}, batch then wait"), Unit::NsPerOp, &xdal).vs(DIRECT, &reference));
    Ok(())
}

/// Pinned host memory from xdal, freed on drop.
struct XdalPinned(*mut c_void);

impl XdalPinned {
    fn new(size: usize) -> Res<XdalPinned> {
        let mut ptr = null_mut();
        check(xdal_malloc_host(&mut ptr, size), "xdal_malloc_host")?;
        // SAFETY: `size` writable bytes just allocated.
        unsafe { ptr.cast::<u8>().write_bytes(0x33, size) };
        Ok(XdalPinned(ptr))
    }
}

impl Drop for XdalPinned {
    fn drop(&mut self) {
        xdal_free_host(self.0);
    }
}

fn copies(timing: &Timing, rows: &mut Vec<Row>, direct: &Direct) -> Res<()> {
    const SIZE: usize = 64 << 20;
    let host = XdalPinned::new(SIZE)?;
    let mem = DeviceMem::touched(SIZE)?;
    let direct_host = Pinned::new(direct, SIZE)?;
    let target = direct.alloc(SIZE)?;
    for (name, kind) in [("H2D", H2D), ("D2H", D2H)] {
        let (dst, src) = if kind == H2D { (mem.ptr, host.0) } else { (host.0, mem.ptr) };
        let direct_copy = || {
            // SAFETY: SIZE bytes on both sides: pinned host memory and
            // device memory of the current context; the copies block.
            let result = unsafe {
                if kind == H2D {
                    (direct.cu.memcpy_htod)(target, direct_host.ptr, SIZE)
                } else {
                    (direct.cu.memcpy_dtoh)(direct_host.ptr, target, SIZE)
                }
            };
            direct.cu.check(result, "cuMemcpy")
        };
        let (xdal, reference) = timing.measure_pair(
            |n| timed(|| (0..n).try_for_each(|_| check(xdal_memcpy(dst, src, SIZE, kind), "xdal_memcpy"))),
            |n| timed(|| (0..n).try_for_each(|_| direct_copy())),
        )?;
        rows.push(
            Row::new(
                GROUP,
                format!("memcpy 64 MiB {name}, pinned host memory"),
                Unit::GBps { bytes: SIZE as f64 },
                &xdal,
            )
            .vs(DIRECT, &reference)
            .goal(Goal::RatioAtLeast(0.95)),
        );
    }
    direct.free(target);
    Ok(())
}
