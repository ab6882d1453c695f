//! `sum_<t>`, `sum_dim_<t>` and `matmul_<t>`: finite values of varied
//! magnitudes, whose rounded sums show the order of the additions, and
//! specials (NaNs, infinities) once each; sums of one run of 4096 elements
//! and of several (a tree of run sums).
use super::*;

/// Element counts of `sum_<t>`: empty, one, less than a row of lanes, one
/// run exactly, a run and one, three runs and one, and five runs and a
/// short one (a tree over six runs, its halves uneven below the top).
const SUM_COUNTS: [usize; 7] = [0, 1, 17, 4096, 4097, 12289, 20483];

#[test]
fn sums() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(5);
    for t in TYPES {
        let name = format!("sum_{}", t.name);
        for n in SUM_COUNTS {
            for mix in [Mix::Finite, Mix::Any] {
                if mix == Mix::Any && n != 17 && n != 4097 {
                    continue;
                }
                let mut case = Case::default();
                let x = array(&mut case, t, n, &mut rng, mix);
                let out = array(&mut case, t, 1, &mut rng, mix);
                case.args = vec![x, out, count(n as u64)];
                report.check(b, &name, &format!("n {n}, {mix:?}"), &case);
            }
        }
        // `out` may be an element of `x`: all of x is read first.
        let mut case = Case::default();
        let x = array(&mut case, t, 40, &mut rng, Mix::Finite);
        case.args = vec![x, Arg::Buffer(0, GUARD + t.bytes(20)), count(40)];
        report.check(b, &name, "out inside x", &case);
    }
    report.finish("sums");
}

#[test]
fn sums_over_a_dimension() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(6);
    // (outer, reduce, inner): contiguous slices, columns across runs (two,
    // and five: an uneven tree), an empty sum, one outer row, an odd
    // number of outputs, and none.
    let shapes = [(3, 5, 1), (2, 4100, 3), (1, 16385, 2), (4, 0, 3), (1, 9, 7), (3, 4, 3), (0, 5, 2)];
    for t in TYPES {
        let name = format!("sum_dim_{}", t.name);
        for (i, (outer, reduce, inner)) in shapes.into_iter().enumerate() {
            let mix = if i == 5 { Mix::Any } else { Mix::Finite };
            let mut case = Case::default();
            let x = array(&mut case, t, outer * reduce * inner, &mut rng, mix);
            let out = array(&mut case, t, outer * inner, &mut rng, mix);
            case.args = vec![x, out, count(outer as u64), count(reduce as u64), count(inner as u64)];
            report.check(b, &name, &format!("{outer} x {reduce} x {inner}, {mix:?}"), &case);
        }
    }
    report.finish("sums_over_a_dimension");
}

impl Report {
    /// `matmul_f32`/`_f64`: the fake runs a GEMM library that groups its
    /// fused multiply-adds its own way (docs/kernels.md), so each element
    /// agrees with OpenCL's sum in order of `k` within the rounding of a
    /// `k`-term dot product, `(k + 2) * eps * sum(|a||b|)`, not to the bit;
    /// NaNs match NaNs, and everything outside `c` matches to the bit.
    fn check_gemm(
        &mut self,
        b: &Backends,
        kernel: &str,
        what: &str,
        case: &Case,
        size: usize,
        shape: (usize, usize, usize),
    ) {
        let (m, n, k) = shape;
        let (fake, opencl) = (b.fake.run(kernel, case), b.opencl.run(kernel, case));
        let value = |bytes: &[u8]| match size {
            4 => f64::from(f32::from_bits(le_bits(bytes) as u32)),
            _ => f64::from_bits(le_bits(bytes)),
        };
        let eps = if size == 4 { f64::from(f32::EPSILON) } else { f64::EPSILON };
        let element = |buffer: &[u8], i: usize| value(&buffer[GUARD + i * size..GUARD + (i + 1) * size]);
        let (a, bm) = (&case.buffers[0], &case.buffers[1]);
        let mut outside = opencl.clone();
        let mut inside = fake.clone();
        for i in 0..m {
            for j in 0..n {
                let at = i * n + j;
                let (f, o) = (element(&fake.buffers[2], at), element(&opencl.buffers[2], at));
                let magnitude: f64 = (0..k).map(|l| (element(a, i * k + l) * element(bm, l * n + j)).abs()).sum();
                let bound = (k as f64 + 2.0) * eps * magnitude;
                let close = f == o || (f.is_nan() && o.is_nan()) || (f - o).abs() <= bound;
                if !close {
                    self.0.push(format!(
                        "{kernel} ({what}): c[{i},{j}] is {f:e} on the fake, {o:e} on OpenCL (bound {bound:e})"
                    ));
                }
                // Compared: the rest of the buffers must match to the bit.
                let range = GUARD + at * size..GUARD + (at + 1) * size;
                outside.buffers[2][range.clone()].fill(0);
                inside.buffers[2][range].fill(0);
            }
        }
        if inside != outside {
            self.0.push(format!("{kernel} ({what}): the backends differ outside c's elements"));
        }
    }
}

#[test]
fn matrix_products() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(7);
    // (m, n, k): plain, k = 0 (+0 everywhere), deeper than the fake's
    // panel, n = 0, and odd sizes (packed rows end mid-byte).
    let shapes = [(3, 5, 4), (2, 3, 0), (7, 3, 130), (2, 0, 3), (3, 3, 5)];
    for t in TYPES {
        let name = format!("matmul_{}", t.name);
        for (i, (m, n, k)) in shapes.into_iter().enumerate() {
            let mix = if i == 4 { Mix::Any } else { Mix::Finite };
            let mut case = Case::default();
            let a = array(&mut case, t, m * k, &mut rng, mix);
            let bm = array(&mut case, t, k * n, &mut rng, mix);
            let c = array(&mut case, t, m * n, &mut rng, mix);
            case.args = vec![a, bm, c, count(m as u64), count(n as u64), count(k as u64)];
            let what = format!("{m} x {n} x {k}, {mix:?}");
            match t.name {
                "f32" | "f64" => report.check_gemm(b, &name, &what, &case, t.bytes(1), (m, n, k)),
                _ => report.check(b, &name, &what, &case),
            }
        }
    }
    report.finish("matrix_products");
}
