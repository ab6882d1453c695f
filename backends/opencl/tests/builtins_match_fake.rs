//! Every built-in kernel of the OpenCL backend against the fake backend's,
//! both reached through their tables: the same inputs on both (special
//! encodings, moderate values, random bits; strided views of several
//! layouts; sums across the fake's run length), and the same outcome
//! expected, bit for bit: whether the launch ran or was refused, and every
//! byte of every buffer afterwards, guard bytes included. One exception:
//! a NaN that arithmetic makes (add, mul, axpby, sums, products) matches
//! any NaN, since its sign and payload are unspecified (docs/semantics.md:
//! they follow the operand the machine code picks, which differs between
//! the fake's own debug and release builds). Conversions define their NaNs
//! and are compared bit for bit.
//!
//! Without an OpenCL platform with an SVM device the tests pass, saying
//! they were skipped.
//!
//! The run time is the OpenCL compiler's: every one of the 910 kernels is
//! compiled at its first launch (on PoCL, tens to hundreds of milliseconds
//! each, one at a time, so minutes in all). PoCL's kernel cache and the
//! backend's program cache make a second run take seconds.
#[path = "builtins_match_fake/backend.rs"]
mod backend;
#[path = "builtins_match_fake/data.rs"]
mod data;
#[path = "builtins_match_fake/reduce.rs"]
mod reduce;
#[path = "builtins_match_fake/refusals.rs"]
mod refusals;
#[path = "builtins_match_fake/strided.rs"]
mod strided;

use backend::{Arg, Backend, Case};
use data::*;
use std::sync::OnceLock;

/// Both backends, or None where OpenCL cannot run.
struct Backends {
    fake: Backend,
    opencl: Backend,
}

fn backends() -> Option<&'static Backends> {
    static BACKENDS: OnceLock<Option<Backends>> = OnceLock::new();
    BACKENDS
        .get_or_init(|| {
            let fake = Backend::start("fake", xdal_fake::xdal_fake_backend_get_v1).expect("the fake backend starts");
            match Backend::start("opencl", xdal_opencl::xdal_opencl_backend_get_v1) {
                Ok(opencl) => Some(Backends { fake, opencl }),
                Err(why) => {
                    eprintln!("skipped: {why}");
                    None
                }
            }
        })
        .as_ref()
}

/// Mismatches of one test, reported together.
#[derive(Default)]
struct Report(Vec<String>);

impl Report {
    /// Runs `case` on both backends; records any difference.
    fn check(&mut self, b: &Backends, kernel: &str, what: &str, case: &Case) {
        let (fake, opencl) = (b.fake.run(kernel, case), b.opencl.run(kernel, case));
        if fake.ran != opencl.ran {
            self.0.push(format!("{kernel} ({what}): the fake {} it, OpenCL {} it", ran(fake.ran), ran(opencl.ran)));
            return;
        }
        let nan = arithmetic_nan(kernel);
        for (i, (f, o)) in fake.buffers.iter().zip(&opencl.buffers).enumerate() {
            let differs = |at: usize| f[at] != o[at] && !nan.is_some_and(|is_nan| both_nan(f, o, at, is_nan));
            if let Some(at) = (0..f.len().min(o.len())).find(|&at| differs(at)) {
                let count = (0..f.len().min(o.len())).filter(|&at| differs(at)).count();
                let window = at.saturating_sub(4)..(at + 12).min(f.len());
                self.0.push(format!(
                    "{kernel} ({what}): buffer {i} differs in {count} byte(s) from byte {at}: fake {:02x?} opencl {:02x?}",
                    &f[window.clone()],
                    &o[window]
                ));
            }
        }
    }

    fn finish(self, test: &str) {
        assert!(
            self.0.is_empty(),
            "{test}: {} mismatch(es):\n{}",
            self.0.len(),
            self.0[..self.0.len().min(40)].join("\n")
        );
    }
}

/// Tells a NaN of a kernel's float type (bytes of one element), where the
/// kernel does arithmetic whose NaNs are unspecified; None otherwise.
type IsNan = (usize, fn(&[u8]) -> bool);

fn arithmetic_nan(kernel: &str) -> Option<IsNan> {
    let arithmetic = ["add_", "mul_", "axpby_", "sum_", "matmul_"].iter().any(|p| kernel.starts_with(p));
    if !arithmetic {
        return None;
    }
    match kernel.rsplit('_').next()? {
        "f64" => Some((8, |b| f64::from_bits(le_bits(b)).is_nan())),
        "f32" => Some((4, |b| f32::from_bits(le_bits(b) as u32).is_nan())),
        "f16" => Some((2, |b| le_bits(b) & 0x7fff > 0x7c00)),
        "bf16" => Some((2, |b| le_bits(b) & 0x7fff > 0x7f80)),
        "f8e4m3" => Some((1, |b| b[0] & 0x7f == 0x7f)),
        "f8e5m2" => Some((1, |b| b[0] & 0x7f > 0x7c)),
        _ => None,
    }
}

/// Little-endian bytes (at most 8) as an integer.
fn le_bits(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |acc, &x| (acc << 8) | u64::from(x))
}

/// Whether the element holding byte `at` is a NaN in both buffers.
fn both_nan(f: &[u8], o: &[u8], at: usize, (size, is_nan): IsNan) -> bool {
    let start = at - at % size;
    let end = start + size;
    end <= f.len() && end <= o.len() && is_nan(&f[start..end]) && is_nan(&o[start..end])
}

fn ran(ran: bool) -> &'static str {
    if ran {
        "ran"
    } else {
        "refused"
    }
}

/// A buffer of `n` elements of `t` between guard bytes, and the argument
/// pointing at its first element.
fn array(case: &mut Case, t: Ty, n: usize, rng: &mut Rng, mix: Mix) -> Arg {
    let mut bytes = rng.bytes(GUARD);
    bytes.extend(elements(t, n, rng, mix));
    bytes.extend(rng.bytes(GUARD));
    case.buffers.push(bytes);
    Arg::Buffer(case.buffers.len() - 1, GUARD)
}

const NULL: [u8; 8] = [0; 8];

fn bytes(b: &[u8]) -> Arg {
    Arg::Bytes(b.to_vec())
}

fn count(n: u64) -> Arg {
    Arg::Bytes(u64_arg(n))
}

/// Every kernel name the ABI lists, in the fake's order.
fn all_names() -> Vec<String> {
    let mut names = Vec::new();
    for t in TYPES {
        names.extend(["fill", "add", "mul", "sum", "matmul"].map(|k| format!("{k}_{}", t.name)));
    }
    for s in TYPES {
        names.extend(TYPES.map(|d| format!("cast_{}_{}", s.name, d.name)));
    }
    for t in TYPES {
        names.extend(["copy_strided", "fill_strided", "axpby", "sum_dim"].map(|k| format!("{k}_{}", t.name)));
    }
    for s in TYPES {
        for d in TYPES {
            names.extend(
                ["cast_trunc", "cast_strided", "cast_strided_trunc"].map(|k| format!("{k}_{}_{}", s.name, d.name)),
            );
        }
    }
    names
}

#[test]
fn every_name_exists_on_both() {
    let Some(b) = backends() else { return };
    let names = all_names();
    assert_eq!(names.len(), 910);
    for name in &names {
        assert!(b.fake.has(name), "the fake lacks {name}");
        assert!(b.opencl.has(name), "OpenCL lacks {name}");
    }
    for name in ["fill_f128", "cast_f32", "sum", "copy_strided_f32_f16", "cast_trunc_f32"] {
        assert!(!b.fake.has(name) && !b.opencl.has(name), "{name} exists");
    }
}

/// Element counts of the elementwise kernels: empty, odd (a packed tail),
/// and more than one work item's worth.
const COUNTS: [usize; 5] = [0, 1, 6, 7, 1001];

#[test]
fn fill_add_mul_axpby() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(1);
    for t in TYPES {
        for n in COUNTS {
            let mut case = Case::default();
            let dst = array(&mut case, t, n, &mut rng, Mix::Any);
            case.args = vec![dst, count(n as u64), bytes(&scalar(t, &mut rng, Mix::Any))];
            report.check(b, &format!("fill_{}", t.name), &format!("n {n}"), &case);
            for kernel in ["add", "mul", "axpby"] {
                let name = format!("{kernel}_{}", t.name);
                // Apart, out in place of a, and of both.
                for layout in 0..3 {
                    let mut case = Case::default();
                    let a = array(&mut case, t, n, &mut rng, Mix::Any);
                    let second = array(&mut case, t, n, &mut rng, Mix::Any);
                    let out = array(&mut case, t, n, &mut rng, Mix::Any);
                    case.args = match layout {
                        0 => vec![a, second, out],
                        1 => vec![a.clone(), second, a],
                        _ => vec![a.clone(), a.clone(), a],
                    };
                    case.args.push(count(n as u64));
                    if kernel == "axpby" {
                        case.args.extend([0, 1].map(|_| bytes(&scalar(t, &mut rng, Mix::Any))));
                    }
                    report.check(b, &name, &format!("n {n}, layout {layout}"), &case);
                }
            }
        }
    }
    report.finish("fill_add_mul_axpby");
}

#[test]
fn casts() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(2);
    for s in TYPES {
        for d in TYPES {
            for kernel in ["cast", "cast_trunc"] {
                let name = format!("{kernel}_{}_{}", s.name, d.name);
                let n = 301;
                let mut case = Case::default();
                let src = array(&mut case, s, n, &mut rng, Mix::Any);
                let dst = array(&mut case, d, n, &mut rng, Mix::Any);
                case.args = vec![src.clone(), dst, count(n as u64)];
                report.check(b, &name, "apart", &case);
                // In place: accepted for equal widths, refused otherwise.
                case.args = vec![src.clone(), src, count(n as u64)];
                report.check(b, &name, "in place", &case);
                let empty = Case { buffers: vec![], args: vec![bytes(&NULL), bytes(&NULL), count(0)] };
                report.check(b, &name, "empty", &empty);
            }
        }
    }
    report.finish("casts");
}
