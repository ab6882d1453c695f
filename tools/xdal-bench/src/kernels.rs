//! Built-in kernels (`xdal_module_get_builtin` + `xdal_module_get_function`):
//! `fill_f32` and `add_f32` over 64 MiB, in GB/s, against a plain memset
//! (`std::ptr::write_bytes`) and a plain add loop over page-aligned host
//! buffers of the same size; `matmul_f32` 512x512x512 in GFLOP/s against a plain blocked
//! matmul loop written here. The references run on one thread.
//!
//! Each kernel runs with the grid shape (from a few candidates, blocks of
//! 256 threads) that was fastest in a short trial; the row names it.
//! A batch is n launches on one stream, then one synchronize.
use crate::api::{arg, check, DeviceMem, HostMem, Res, Stream};
use crate::report::{Goal, Row, Unit};
use crate::stats::{timed, Timing};
use std::ffi::CStr;
use std::hint::black_box;
use std::ptr::null_mut;
use std::time::Duration;
use xdal::abi::*;
use xdal::*;

const GROUP: &str = "built-in kernels";
const BYTES: usize = 64 << 20;
const N: usize = BYTES / 4;
const DIM: usize = 512;
const BLOCK: u32 = 256;
const GRIDS: [u32; 5] = [2, 8, 64, 256, 1024];

/// The built-in module, unloaded on drop.
struct Module(xdal_module_t);

impl Module {
    fn builtin() -> Res<Module> {
        let mut module = null_mut();
        check(xdal_module_get_builtin(&mut module), "xdal_module_get_builtin")?;
        Ok(Module(module))
    }

    fn function(&self, name: &CStr) -> Res<xdal_function_t> {
        let mut function = null_mut();
        let what = format!("xdal_module_get_function({})", name.to_string_lossy());
        check(xdal_module_get_function(&mut function, self.0, name.as_ptr()), &what)?;
        Ok(function)
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        xdal_module_unload(self.0);
    }
}

/// One kernel with its arguments, launched on one stream.
struct Kernel<'a> {
    function: xdal_function_t,
    args: &'a [xdal_kernel_arg_t],
    stream: &'a Stream,
}

impl<'a> Kernel<'a> {
    fn new(function: xdal_function_t, args: &'a [xdal_kernel_arg_t], stream: &'a Stream) -> Kernel<'a> {
        Kernel { function, args, stream }
    }

    fn batch(&self, grid: u32, n: u64) -> Res<Duration> {
        let (grid, block) = (xdal_dim3_t { x: grid, y: 1, z: 1 }, xdal_dim3_t { x: BLOCK, y: 1, z: 1 });
        timed(|| {
            for _ in 0..n {
                let status = xdal_launch_kernel(
                    self.function,
                    grid,
                    block,
                    0,
                    self.stream.0,
                    self.args.as_ptr(),
                    self.args.len(),
                );
                check(status, "xdal_launch_kernel")?;
            }
            self.stream.sync()
        })
    }

    /// The grid from `GRIDS` for which one launch is fastest (best of two).
    fn fastest_grid(&self) -> Res<u32> {
        self.batch(GRIDS[0], 1)?;
        let mut best = (Duration::MAX, GRIDS[0]);
        for grid in GRIDS {
            for _ in 0..2 {
                best = best.min((self.batch(grid, 1)?, grid));
            }
        }
        Ok(best.1)
    }

    /// Picks the grid, then measures with it.
    fn measure(&self, timing: &Timing) -> Res<(u32, crate::stats::Samples)> {
        let grid = self.fastest_grid()?;
        Ok((grid, timing.measure(|n| self.batch(grid, n))?))
    }
}

pub fn run(timing: &Timing, rows: &mut Vec<Row>) -> Res<()> {
    let module = Module::builtin()?;
    let stream = Stream::new()?;
    let (a, b, out) = (DeviceMem::touched(BYTES)?, DeviceMem::touched(BYTES)?, DeviceMem::touched(BYTES)?);
    let n = N as u64;
    let (one, two) = (1.0f32, 2.0f32);
    let fill_f32 = module.function(c"fill_f32")?;

    // Inputs for add: a = 1, b = 2.
    Kernel::new(fill_f32, &[arg(&a.ptr), arg(&n), arg(&one)], &stream).batch(64, 1)?;
    Kernel::new(fill_f32, &[arg(&b.ptr), arg(&n), arg(&two)], &stream).batch(64, 1)?;

    let mut host_out = HostMem::new(BYTES, 0)?;
    let memset = timing.measure(|n| {
        timed(|| {
            for _ in 0..n {
                // SAFETY: `host_out` holds BYTES bytes.
                unsafe { std::ptr::write_bytes(black_box(host_out.ptr().cast::<u8>()), 0x3f, BYTES) };
            }
            Ok(())
        })
    })?;
    let (grid, fill) = Kernel::new(fill_f32, &[arg(&out.ptr), arg(&n), arg(&one)], &stream).measure(timing)?;
    rows.push(
        Row::new(GROUP, format!("fill_f32 64 MiB, grid {grid} x {BLOCK}"), Unit::GBps { bytes: BYTES as f64 }, &fill)
            .vs("memset 64 MiB (write_bytes), 1 thread", &memset)
            .goal(Goal::RatioAtLeast(0.8)),
    );

    let (mut host_a, mut host_b) = (HostMem::new(BYTES, 0)?, HostMem::new(BYTES, 0)?);
    host_a.f32s().fill(1.0);
    host_b.f32s().fill(2.0);
    let (x, y, out_host) = (host_a.f32s(), host_b.f32s(), host_out.f32s());
    let plain_add = timing.measure(|n| {
        timed(|| {
            for _ in 0..n {
                for ((o, x), y) in out_host.iter_mut().zip(black_box(&*x)).zip(black_box(&*y)) {
                    *o = x + y;
                }
                black_box(&mut *out_host);
            }
            Ok(())
        })
    })?;
    let add_args = [arg(&a.ptr), arg(&b.ptr), arg(&out.ptr), arg(&n)];
    let (grid, add) = Kernel::new(module.function(c"add_f32")?, &add_args, &stream).measure(timing)?;
    let traffic = Unit::GBps { bytes: 3.0 * BYTES as f64 };
    rows.push(
        Row::new(GROUP, format!("add_f32 64 MiB (2 reads + 1 write), grid {grid} x {BLOCK}"), traffic, &add)
            .vs("plain add loop, 1 thread", &plain_add)
            .goal(Goal::RatioAtLeast(0.8)),
    );
    drop((host_a, host_b, host_out));

    matmul(timing, rows, module.function(c"matmul_f32")?, &stream)
}

fn matmul(timing: &Timing, rows: &mut Vec<Row>, function: xdal_function_t, stream: &Stream) -> Res<()> {
    let elements = DIM * DIM;
    let host_a: Vec<f32> = (0..elements).map(|i| (i % 7) as f32 * 0.25).collect();
    let host_b: Vec<f32> = (0..elements).map(|i| (i % 5) as f32 * 0.5).collect();
    let mut host_c = vec![0f32; elements];
    let bytes = elements * 4;
    let (a, b, c) = (DeviceMem::new(bytes)?, DeviceMem::new(bytes)?, DeviceMem::touched(bytes)?);
    check(xdal_memcpy(a.ptr, host_a.as_ptr().cast(), bytes, crate::api::H2D), "xdal_memcpy")?;
    check(xdal_memcpy(b.ptr, host_b.as_ptr().cast(), bytes, crate::api::H2D), "xdal_memcpy")?;
    let flops = Unit::GFlops { flops: 2.0 * (DIM * DIM * DIM) as f64 };
    let reference = timing.measure(|n| {
        timed(|| {
            for _ in 0..n {
                blocked_matmul(black_box(&host_a), black_box(&host_b), &mut host_c, DIM);
                black_box(&mut host_c);
            }
            Ok(())
        })
    })?;
    let dim = DIM as u64;
    let args = [arg(&a.ptr), arg(&b.ptr), arg(&c.ptr), arg(&dim), arg(&dim), arg(&dim)];
    let (grid, samples) = Kernel::new(function, &args, stream).measure(timing)?;
    // The kernel must compute what the reference does (within rounding:
    // the fake's GEMM groups its sums its own way).
    let mut back = vec![0f32; elements];
    check(xdal_memcpy(back.as_mut_ptr().cast(), c.ptr, bytes, crate::api::D2H), "xdal_memcpy")?;
    if back.iter().zip(&host_c).any(|(x, y)| (x - y).abs() > 1e-3 * y.abs().max(1.0)) {
        return Err("matmul_f32 disagrees with the reference matmul".into());
    }
    rows.push(
        Row::new(GROUP, format!("matmul_f32 512x512x512, grid {grid} x {BLOCK}"), flops, &samples)
            .vs("blocked matmul loop, 1 thread", &reference),
    );
    Ok(())
}

/// Row-major `c = a * b`, all `n x n`: tiles of `b` kept in cache, rows of
/// `c` updated by contiguous, vectorisable runs.
fn blocked_matmul(a: &[f32], b: &[f32], c: &mut [f32], n: usize) {
    const TI: usize = 64;
    const TK: usize = 128;
    const TJ: usize = 256;
    c.fill(0.0);
    for i0 in (0..n).step_by(TI) {
        for k0 in (0..n).step_by(TK) {
            for j0 in (0..n).step_by(TJ) {
                let (k1, j1) = ((k0 + TK).min(n), (j0 + TJ).min(n));
                for i in i0..(i0 + TI).min(n) {
                    let c_row = &mut c[i * n + j0..i * n + j1];
                    for k in k0..k1 {
                        let a_ik = a[i * n + k];
                        let b_row = &b[k * n + j0..k * n + j1];
                        for (c, b) in c_row.iter_mut().zip(b_row) {
                            *c += a_ik * b;
                        }
                    }
                }
            }
        }
    }
}
