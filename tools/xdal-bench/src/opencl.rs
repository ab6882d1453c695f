//! The OpenCL backend beside direct OpenCL (run with `XDAL_BACKEND=opencl`;
//! the group says so and measures nothing on another backend): the same
//! operation through xdal's C ABI and through the OpenCL API called
//! directly, in its own context on the platform's first SVM device, in the
//! same run. Kernel launches and fills are ns per enqueue, twice: with
//! the stream held while the calls are timed (the enqueue rate, with the
//! target), and as a batch enqueued then waited for once (execution
//! included); copies are GB/s of blocking copies. Run with `XDAL_OPENCL_DEVICES=1`, so that xdal's device
//! 0 is the whole device, as the direct side's is.
//!
//! Also the program build, cold (a source neither the OpenCL runtime nor
//! xdal has seen) and warm (the same source again: the compiler cache).
use crate::api::{arg, check, DeviceMem, HostMem, Res, Stream, D2H, H2D, ONE};
use crate::gate::{gated_calls, Gate};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Samples, Timing};
use cl3::types::{cl_command_queue, cl_context, cl_device_id, cl_event, cl_kernel, cl_program};
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::time::Instant;
use xdal::abi::{xdal_function_t, xdal_module_t};
use xdal::*;

const GROUP: &str = "OpenCL backend vs direct OpenCL";
const DIRECT: &str = "direct OpenCL";
const KERNEL: &str = "__kernel void touch(__global int *x, int v) { if (get_global_id(0) == 0) x[0] = v; }";

fn cl<T>(result: Result<T, i32>, what: &str) -> Res<T> {
    result.map_err(|code| format!("{what}: OpenCL error {code} ({})", cl3::error_codes::error_text(code)))
}

/// The entry points of a launch and a fill, called as a C program linked
/// with the ICD loader calls them: through pointers of their C type,
/// resolved once before anything is timed (cl3's table would add its own
/// checks to each call, and the backend calls the runtime this way too).
/// The enqueues ask for no event (nobody waits on a single command here),
/// the cheapest way to use OpenCL directly, and what the backend does for
/// commands nothing waits on.
struct Entries {
    fill: unsafe extern "C" fn(
        cl_command_queue,
        *mut c_void,
        *const c_void,
        usize,
        usize,
        u32,
        *const cl_event,
        *mut cl_event,
    ) -> i32,
    kernel: unsafe extern "C" fn(
        cl_command_queue,
        cl_kernel,
        u32,
        *const usize,
        *const usize,
        *const usize,
        u32,
        *const cl_event,
        *mut cl_event,
    ) -> i32,
    set_arg: unsafe extern "C" fn(cl_kernel, u32, usize, *const c_void) -> i32,
    set_arg_svm: unsafe extern "C" fn(cl_kernel, u32, *const c_void) -> i32,
    _library: libloading::Library,
}

impl Entries {
    fn load() -> Res<Entries> {
        let what = |e: libloading::Error| format!("libOpenCL.so.1: {e}");
        // SAFETY: the ICD loader, which the backend opened already.
        let library = unsafe { libloading::Library::new("libOpenCL.so.1") }.map_err(what)?;
        // SAFETY: the OpenCL 2.0 entry points of these names, whose C
        // signatures the fields' types spell.
        unsafe {
            Ok(Entries {
                fill: *library.get(b"clEnqueueSVMMemFill\0").map_err(what)?,
                kernel: *library.get(b"clEnqueueNDRangeKernel\0").map_err(what)?,
                set_arg: *library.get(b"clSetKernelArg\0").map_err(what)?,
                set_arg_svm: *library.get(b"clSetKernelArgSVMPointer\0").map_err(what)?,
                _library: library,
            })
        }
    }
}

/// An entry point's result.
fn status(code: i32, what: &str) -> Res<()> {
    match code {
        0 => Ok(()),
        code => cl(Err(code), what),
    }
}

/// A context, queue, program and kernel of the OpenCL API's own.
struct Direct {
    context: cl_context,
    queue: cl_command_queue,
    program: cl_program,
    kernel: cl_kernel,
    entries: Entries,
}

impl Direct {
    fn new() -> Res<Direct> {
        let device = svm_device()?;
        let context = cl(cl3::context::create_context(&[device], null(), None, null_mut()), "clCreateContext")?;
        // In order with profiling on, as the backend creates its queues
        // (xdal's events are timed by default, as CUDA's are): the same
        // commands on both sides.
        let properties =
            [cl3::command_queue::CL_QUEUE_PROPERTIES as u64, cl3::command_queue::CL_QUEUE_PROFILING_ENABLE, 0];
        let queue = cl(
            // SAFETY: a live context and one of its devices; a
            // zero-terminated property list.
            unsafe { cl3::command_queue::create_command_queue_with_properties(context, device, properties.as_ptr()) },
            "clCreateCommandQueueWithProperties",
        )?;
        let program = cl(cl3::program::create_program_with_source(context, &[KERNEL]), "clCreateProgramWithSource")?;
        cl(cl3::program::build_program(program, &[device], c"", None, null_mut()), "clBuildProgram")?;
        let kernel = cl(cl3::kernel::create_kernel(program, c"touch"), "clCreateKernel")?;
        Ok(Direct { context, queue, program, kernel, entries: Entries::load()? })
    }

    fn svm(&self, size: usize) -> Res<*mut c_void> {
        // SAFETY: a live context; valid flags.
        cl(unsafe { cl3::memory::svm_alloc(self.context, cl3::memory::CL_MEM_READ_WRITE, size, 0) }, "clSVMAlloc")
    }

    fn finish(&self) -> Res<()> {
        cl(cl3::command_queue::finish(self.queue), "clFinish")
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        // SAFETY: objects made in `new`, released once, the queue drained.
        unsafe {
            let _ = cl3::command_queue::finish(self.queue);
            let _ = cl3::kernel::release_kernel(self.kernel);
            let _ = cl3::program::release_program(self.program);
            let _ = cl3::command_queue::release_command_queue(self.queue);
            let _ = cl3::context::release_context(self.context);
        }
    }
}

/// The first device with coarse-grain SVM of the first platform having one,
/// as the backend chooses.
fn svm_device() -> Res<cl_device_id> {
    for platform in cl(cl3::platform::get_platform_ids(), "clGetPlatformIDs")? {
        let devices = cl3::device::get_device_ids(platform, cl3::device::CL_DEVICE_TYPE_ALL).unwrap_or_default();
        for device in devices {
            let caps: u64 = cl3::device::get_device_info(device, cl3::device::CL_DEVICE_SVM_CAPABILITIES)
                .map(u64::from)
                .unwrap_or(0);
            if caps & cl3::device::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0 {
                return Ok(device);
            }
        }
    }
    Err("no OpenCL device with SVM".into())
}

fn load(source: &str) -> Res<(xdal_module_t, xdal_function_t)> {
    let (mut module, mut function) = (null_mut(), null_mut());
    check(xdal_module_load_data(&mut module, source.as_ptr().cast(), source.len()), "xdal_module_load_data")?;
    check(xdal_module_get_function(&mut function, module, c"touch".as_ptr()), "xdal_module_get_function")?;
    Ok((module, function))
}

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    if crate::api::backend_name() != c"opencl" {
        eprint!(" (skipped: XDAL_BACKEND is not opencl)");
        return Ok(());
    }
    let direct = Direct::new()?;
    launches(timing, rows, &direct)?;
    fills(timing, rows, &direct)?;
    copies(timing, rows, &direct)?;
    builds(timing, rows)
}

fn launches(timing: &Timing, rows: &mut Vec<Row>, direct: &Direct) -> Res<()> {
    let stream = Stream::new()?;
    let (module, function) = load(KERNEL)?;
    let mem = DeviceMem::new(256)?;
    let target = direct.svm(256)?;
    let value = 7i32;
    let args = [arg(&mem.ptr), arg(&value)];
    let xdal_launch =
        || check(xdal_launch_kernel(function, ONE, ONE, 0, stream.0, args.as_ptr(), args.len()), "xdal_launch_kernel");
    let direct_launch = || {
        // SAFETY: a live kernel; SVM memory of its context and an int.
        unsafe {
            status((direct.entries.set_arg_svm)(direct.kernel, 0, target), "clSetKernelArgSVMPointer")?;
            let v = (&value as *const i32).cast();
            status((direct.entries.set_arg)(direct.kernel, 1, 4, v), "clSetKernelArg")?;
            // The work-group size given, as xdal gives its block's: with
            // none, PoCL would choose one, some 150 instructions more.
            let (global, local) = (1usize, 1usize);
            let enqueued =
                (direct.entries.kernel)(direct.queue, direct.kernel, 1, null(), &global, &local, 0, null(), null_mut());
            status(enqueued, "clEnqueueNDRangeKernel")?;
        }
        Ok(())
    };
    enqueue_rows(timing, rows, "kernel launch (1 work item)", &stream, direct, xdal_launch, direct_launch)?;
    check(xdal_module_unload(module), "xdal_module_unload")?;
    // SAFETY: allocated above from this context; the queue is drained.
    unsafe { cl3::memory::svm_free(direct.context, target) }.map_err(|c| format!("clSVMFree: {c}"))
}

fn fills(timing: &Timing, rows: &mut Vec<Row>, direct: &Direct) -> Res<()> {
    let stream = Stream::new()?;
    let mem = DeviceMem::new(64)?;
    let target = direct.svm(64)?;
    let xdal_fill = || check(xdal_memset_async(mem.ptr, 1, 64, stream.0), "xdal_memset_async");
    let direct_fill = || {
        let pattern = 1u8;
        let pattern = std::ptr::from_ref(&pattern).cast();
        // 64 bytes of SVM memory of the queue's context.
        // SAFETY: 64 bytes of SVM memory of the queue's context; the
        // runtime copies the pattern at the call.
        let enqueued = unsafe { (direct.entries.fill)(direct.queue, target, pattern, 1, 64, 0, null(), null_mut()) };
        status(enqueued, "clEnqueueSVMMemFill")
    };
    enqueue_rows(timing, rows, "memset_async 64 B", &stream, direct, xdal_fill, direct_fill)?;
    // SAFETY: allocated above from this context; the queue is drained.
    unsafe { cl3::memory::svm_free(direct.context, target) }.map_err(|c| format!("clSVMFree: {c}"))
}

/// Two rows for one command, through xdal and direct: the enqueue rate
/// (the calls timed while the stream is held, on both sides, so that the
/// figure is the calls' cost on the calling thread and not PoCL's workers
/// running the commands beside them on the same two cores, whose noise is
/// many times the difference sought), with the target; and a batch then
/// its wait (enqueue and execution together, the device's work being the
/// same on both sides), shown without one.
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
    let (xdal, reference) = timing.measure_pair(
        |n| gated_calls(n, &mut xdal_call, || Gate::front(s), || stream.sync()),
        |n| gated_calls(n, &mut direct_call, || UserGate::new(direct), || direct.finish()),
    )?;
    rows.push(
        Row::new(GROUP, format!("{what}, enqueue with the stream held"), Unit::NsPerOp, &xdal)
            .vs(DIRECT, &reference)
            .goal(Goal::RatioAtMost(1.05)),
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
                direct.finish()
            })
        },
    )?;
    rows.push(Row::new(GROUP, format!("{what}, batch then wait"), Unit::NsPerOp, &xdal).vs(DIRECT, &reference));
    Ok(())
}

/// Direct OpenCL's gate: a barrier waiting on a user event holds the
/// queue until the event completes, when this is dropped.
struct UserGate(cl3::types::cl_event);

impl UserGate {
    fn new(direct: &Direct) -> Res<UserGate> {
        let gate = UserGate(cl(cl3::event::create_user_event(direct.context), "clCreateUserEvent")?);
        let barrier = cl(
            // SAFETY: a live queue; the wait list holds one live user event.
            unsafe { cl3::command_queue::enqueue_barrier_with_wait_list(direct.queue, 1, &gate.0) },
            "clEnqueueBarrierWithWaitList",
        )?;
        // SAFETY: an event this call owns.
        let _ = unsafe { cl3::event::release_event(barrier) };
        Ok(gate)
    }
}

impl Drop for UserGate {
    fn drop(&mut self) {
        let _ = cl3::event::set_user_event_status(self.0, cl3::event::CL_COMPLETE);
        // SAFETY: the user event made in `new`, released once.
        let _ = unsafe { cl3::event::release_event(self.0) };
    }
}

fn copies(timing: &Timing, rows: &mut Vec<Row>, direct: &Direct) -> Res<()> {
    const SIZE: usize = 64 << 20;
    let host = HostMem::new(SIZE, 0x33)?;
    let mem = DeviceMem::touched(SIZE)?;
    let target = direct.svm(SIZE)?;
    for (name, kind) in [("H2D", H2D), ("D2H", D2H)] {
        let (dst, src) = if kind == H2D { (mem.ptr, host.ptr()) } else { (host.ptr(), mem.ptr) };
        let (direct_dst, direct_src) = if kind == H2D { (target, host.ptr()) } else { (host.ptr(), target) };
        let (xdal, reference) = timing.measure_pair(
            |n| timed(|| (0..n).try_for_each(|_| check(xdal_memcpy(dst, src, SIZE, kind), "xdal_memcpy"))),
            |n| {
                timed(|| {
                    (0..n).try_for_each(|_| {
                        // SAFETY: both ranges hold SIZE bytes; the copy blocks.
                        let event = cl(
                            unsafe {
                                cl3::command_queue::enqueue_svm_mem_cpy(
                                    direct.queue,
                                    1,
                                    direct_dst,
                                    direct_src,
                                    SIZE,
                                    0,
                                    null(),
                                )
                            },
                            "clEnqueueSVMMemcpy",
                        )?;
                        // SAFETY: an event this loop owns.
                        let _ = unsafe { cl3::event::release_event(event) };
                        Ok(())
                    })
                })
            },
        )?;
        rows.push(
            Row::new(GROUP, format!("memcpy 64 MiB {name}"), Unit::GBps { bytes: SIZE as f64 }, &xdal)
                .vs(DIRECT, &reference)
                .goal(Goal::RatioAtLeast(0.95)),
        );
    }
    // SAFETY: allocated above from this context; nothing is pending.
    unsafe { cl3::memory::svm_free(direct.context, target) }.map_err(|c| format!("clSVMFree: {c}"))
}

/// Program builds as a user waits for them: loading the module, getting
/// the kernel and its first launch to completion (PoCL compiles a kernel
/// at its first launch, not at clBuildProgram). Each cold one is of a
/// source made new by a comment; then the same source again in a new
/// module, which shares the program the backend built for it moments
/// before (as a process that reloads its kernels would).
fn builds(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let stream = Stream::new()?;
    let mem = DeviceMem::new(256)?;
    let value = 7i32;
    let args = [arg(&mem.ptr), arg(&value)];
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for rep in 0..timing.reps.min(5) {
        let source = format!("// {} {rep} {:?}\n{KERNEL}", std::process::id(), Instant::now());
        for times in [&mut cold, &mut warm] {
            let started = Instant::now();
            let (module, function) = load(&source)?;
            check(
                xdal_launch_kernel(function, ONE, ONE, 0, stream.0, args.as_ptr(), args.len()),
                "xdal_launch_kernel",
            )?;
            stream.sync()?;
            times.push(started.elapsed().as_secs_f64());
            check(xdal_module_unload(module), "xdal_module_unload")?;
        }
    }
    let (cold, warm) = (Samples::alone(cold), Samples::alone(warm));
    rows.push(
        Row::new(GROUP, "program build and first launch, warm (the same source again)", Unit::NsPerOp, &warm)
            .vs("cold build", &cold),
    );
    Ok(())
}
