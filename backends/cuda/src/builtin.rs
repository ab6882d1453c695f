//! The built-in kernels' programs as this backend loads them: PTX
//! generated ahead of time from xdal-backend-support's kernel templates
//! (one program per element type), each loaded on a device the first time
//! one of its kernels is asked for there, and kept for the process.
//! What a built-in is called, takes and checks is the catalogue's
//! (`xdal_backend_support::kernels`).
use crate::error::CuResult;
use crate::module::Image;
use std::sync::{Arc, OnceLock};
use xdal_backend_support::kernels::Plan;

/// Threads per block of a built-in's launch.
pub(crate) const BLOCK: u32 = 256;

/// The PTX of each program, in program order (`xdal_dtype_t` order: a
/// test checks each file is its program's). Generated ahead of time by
/// NVRTC for compute_80 (tools/cuda-ptx.sh), so that building needs no
/// CUDA; the driver compiles it for the device at the first load.
static PTX: &[&str] = &[
    include_str!("../ptx/f64.ptx"),
    include_str!("../ptx/f32.ptx"),
    include_str!("../ptx/f16.ptx"),
    include_str!("../ptx/bf16.ptx"),
    include_str!("../ptx/f8e4m3.ptx"),
    include_str!("../ptx/f8e5m2.ptx"),
    include_str!("../ptx/f4e2m1.ptx"),
    include_str!("../ptx/i64.ptx"),
    include_str!("../ptx/i32.ptx"),
    include_str!("../ptx/i16.ptx"),
    include_str!("../ptx/i8.ptx"),
    include_str!("../ptx/u8.ptx"),
    include_str!("../ptx/i4.ptx"),
    include_str!("../ptx/bool.ptx"),
];

/// The grid and block sizes (blocks, threads per block) of a built-in's
/// launch. A thread per unit of work where the plan runs in parallel: the
/// kernels give each thread a contiguous run of the work, so with a unit
/// each neighbouring threads touch neighbouring memory, which a GPU
/// coalesces (the plan's own `work_items`, sized for runtimes that compile
/// a kernel per range size, would give each thread a run of thousands).
/// One thread, in one block, where the plan does everything in order:
/// the kernels split their work by the grid's size, so a block of `BLOCK`
/// would split it again, and the elements a plan keeps on one thread (a
/// packed destination whose bytes two runs could share) would race. The
/// grid is capped at the device's limit: the kernels split their work by
/// the grid's size, so it still covers it.
pub(crate) fn launch_size(plan: &Plan, max_blocks: u32) -> (u32, u32) {
    if plan.work_items <= 1 {
        return (1, 1);
    }
    let blocks = u32::try_from(plan.units.max(1).div_ceil(BLOCK as usize)).unwrap_or(u32::MAX);
    (blocks.min(max_blocks.max(1)), BLOCK)
}

/// `dtype_mask` of the device properties: the built-ins handle every type.
pub(crate) fn dtype_mask() -> u64 {
    xdal_backend_support::kernels::dtype_mask()
}

/// Program `program`'s image, shared by every function of it.
pub(crate) fn image(program: usize) -> CuResult<Arc<Image>> {
    static IMAGES: OnceLock<Vec<OnceLock<Arc<Image>>>> = OnceLock::new();
    let images = IMAGES.get_or_init(|| PTX.iter().map(|_| OnceLock::new()).collect());
    let image = images[program].get_or_init(|| {
        let stem = xdal_backend_support::kernels::program_stem(program);
        Arc::new(Image::new(PTX[program].as_bytes(), format!("built-in program {stem}")))
    });
    Ok(image.clone())
}

#[cfg(test)]
mod tests {
    use super::PTX;
    use std::collections::HashSet;
    use xdal_backend_support::kernels::{self, ArgKind};

    /// The kernels of a PTX text and their parameters' byte sizes.
    fn entries(ptx: &str) -> Vec<(String, Vec<usize>)> {
        let mut found = Vec::new();
        let mut lines = ptx.lines();
        while let Some(line) = lines.next() {
            let Some(name) = line.strip_prefix(".visible .entry ").and_then(|l| l.strip_suffix('(')) else { continue };
            let params = lines
                .by_ref()
                .take_while(|l| l.trim() != ")")
                .map(|l| match l.split_whitespace().nth(1) {
                    Some(".u64" | ".s64" | ".f64" | ".b64") => 8,
                    Some(".u32" | ".s32" | ".f32" | ".b32") => 4,
                    Some(".u16" | ".s16" | ".f16" | ".b16") => 2,
                    Some(".u8" | ".s8" | ".b8") => 1,
                    // An aggregate: `.param .align A .b8 name[N]`.
                    _ => l.rsplit('[').next().and_then(|n| n.trim_end_matches([']', ',']).parse().ok()).unwrap_or(0),
                })
                .collect();
            found.push((name.to_string(), params));
        }
        found
    }

    #[test]
    fn a_parallel_plan_runs_a_thread_per_unit_and_an_ordered_one_a_single_thread() {
        use super::{launch_size, Plan, BLOCK};
        assert_eq!(launch_size(&Plan { work_items: 1 << 16, units: 10_000_000 }, u32::MAX), (39_063, BLOCK));
        assert_eq!(launch_size(&Plan { work_items: 1 << 10, units: 300 }, u32::MAX), (2, BLOCK));
        assert_eq!(
            launch_size(&Plan { work_items: 1, units: 1 }, u32::MAX),
            (1, 1),
            "in order: one thread, not one block of BLOCK threads splitting the work again"
        );
        assert_eq!(
            launch_size(&Plan { work_items: 1 << 16, units: 10_000_000 }, 1000),
            (1000, BLOCK),
            "capped at the grid limit"
        );
        assert_eq!(
            launch_size(&Plan { work_items: 1 << 16, units: 1 << 40 }, 0),
            (1, BLOCK),
            "a limit of 0 reported still gives one block"
        );
    }

    #[test]
    fn no_built_in_calls_a_function() {
        // ptxas miscompiled sum's loop around a call to an out-of-line
        // codec (f16 and F8 sums all zero on a GPU): dialect.cl inlines
        // every helper for CUDA, and the committed PTX must show it.
        for (program, ptx) in PTX.iter().enumerate() {
            let calls = ptx.lines().filter(|l| l.trim_start().starts_with("call")).count();
            assert_eq!(calls, 0, "program {}'s PTX makes {calls} calls", kernels::program_stem(program));
        }
    }

    #[test]
    fn every_program_has_its_ptx_and_every_built_in_its_kernel() {
        assert_eq!(PTX.len(), kernels::program_count());
        let programs: Vec<Vec<(String, Vec<usize>)>> = PTX.iter().map(|p| entries(p)).collect();
        for (program, found) in programs.iter().enumerate() {
            let fill = format!("fill_{}", kernels::program_stem(program));
            assert!(found.iter().any(|(name, _)| *name == fill), "program {program}'s PTX has no {fill}");
        }
        let mut seen = HashSet::new();
        for b in kernels::all() {
            let (_, params) = programs[b.program]
                .iter()
                .find(|(name, _)| *name == b.kernel)
                .unwrap_or_else(|| panic!("{}: no kernel {} in program {}", b.name, b.kernel, b.program));
            let mut expected: Vec<usize> =
                b.args.iter().map(|&(kind, size)| if kind == ArgKind::Pointer { 8 } else { size }).collect();
            if b.route.is_some() {
                expected.push(4);
            }
            assert_eq!(*params, expected, "{}: kernel {}'s parameters", b.name, b.kernel);
            seen.insert(b.kernel.clone());
        }
        assert!(seen.len() > 100, "{} kernels", seen.len());
    }
}
