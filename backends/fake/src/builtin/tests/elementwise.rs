//! `fill_<t>`, `add_<t>` and `mul_<t>` for every type, on every grid, in
//! place too, leaving every byte outside `[0, n)` alone.
use super::*;
use crate::builtin::streaming::STREAMING_FILL_BYTES;
use crate::dtype::{for_each_elem, Class, Elem};

/// Element counts: empty, tiny, odd (a packed tail), more than a line.
const SIZES: [usize; 5] = [0, 1, 2, 37, 301];
/// Bytes past the end of each output buffer, which must stay untouched.
const GUARD: usize = 3;

/// Asserts that the bytes of `buf` after `n` elements of `E` (the high
/// nibble of a packed tail included) still hold the fill byte `byte`.
fn assert_untouched<E: Elem>(what: &str, buf: &Buf, n: usize, byte: u8) {
    let used = E::DTYPE.bytes_for(n as u64).unwrap();
    assert!(buf.bytes()[used..].iter().all(|&b| b == byte), "{what}: wrote past the end");
    if E::DTYPE.is_packed() && n % 2 == 1 {
        assert_eq!(buf.bytes()[used - 1] >> 4, byte >> 4, "{what}: wrote the nibble after the end");
    }
}

fn fill<E: Elem>(rng: &mut Rng) {
    let name = format!("fill_{}", E::DTYPE.name());
    for grid in GRIDS {
        for n in SIZES {
            let value: E = rng.any();
            let mut scalar = scalar_arg(value);
            if E::DTYPE.is_packed() {
                // The high nibble of a 4-bit scalar is not part of it.
                scalar[0] |= 0xB0;
            }
            let mut dst = Buf::filled(E::DTYPE.bytes_for(n as u64).unwrap() + GUARD, 0xA5);
            let what = format!("{name} n={n} grid={grid:?}");
            assert_eq!(launch(&name, grid, &[dst.arg(), u64_arg(n as u64), scalar]), 0, "{what}");
            check(&what, &dst.elems::<E>(n), &vec![value.canonical(); n]);
            assert_untouched::<E>(&what, &dst, n, 0xA5);
        }
    }
}

/// `x + y` or `x * y` computed independently of the kernels: exactly (or
/// in `f64`, whose double rounding is harmless for these formats) and then
/// rounded once; integers wrap; bool is or / and.
fn reference<E: Elem>(add: bool, x: E, y: E) -> E {
    match E::DTYPE.class() {
        Class::Float => {
            let (p, q) = (x.to_f64(), y.to_f64());
            E::from_f64(if add { p + q } else { p * q })
        }
        Class::Int => {
            let (p, q) = (x.to_i64(), y.to_i64());
            E::from_i64(if add { p.wrapping_add(q) } else { p.wrapping_mul(q) })
        }
        Class::Bool => {
            let (p, q) = (x.is_nonzero(), y.is_nonzero());
            E::from_bool(if add { p | q } else { p & q })
        }
    }
}

fn binary<E: Elem>(rng: &mut Rng) {
    for (add, op) in [(true, "add"), (false, "mul")] {
        let name = format!("{op}_{}", E::DTYPE.name());
        for grid in GRIDS {
            for n in SIZES {
                let what = format!("{name} n={n} grid={grid:?}");
                let a: Vec<E> = (0..n).map(|_| rng.any()).collect();
                let b: Vec<E> = (0..n).map(|_| rng.any()).collect();
                let want: Vec<E> = a.iter().zip(&b).map(|(&x, &y)| reference(add, x, y)).collect();
                let (mut ab, mut bb) = (Buf::of(&a), Buf::of(&b));
                let mut out = Buf::filled(E::DTYPE.bytes_for(n as u64).unwrap() + GUARD, 0x5A);
                let args = [ab.arg(), bb.arg(), out.arg(), u64_arg(n as u64)];
                assert_eq!(launch(&name, grid, &args), 0, "{what}");
                check(&what, &out.elems::<E>(n), &want);
                assert_untouched::<E>(&what, &out, n, 0x5A);

                // In place: out = a, then out = a = b.
                let args = [ab.arg(), bb.arg(), ab.arg(), u64_arg(n as u64)];
                assert_eq!(launch(&name, grid, &args), 0, "{what} in place");
                check(&format!("{what} out=a"), &ab.elems::<E>(n), &want);
                let twice: Vec<E> = b.iter().map(|&y| reference(add, y, y)).collect();
                let args = [bb.arg(), bb.arg(), bb.arg(), u64_arg(n as u64)];
                assert_eq!(launch(&name, grid, &args), 0, "{what} in place");
                check(&format!("{what} out=a=b"), &bb.elems::<E>(n), &twice);
            }
        }
    }
}

/// A fill of at least `STREAMING_FILL_BYTES` (streaming stores) on a grid
/// whose shares end mid-way through 16-byte units: every element, nothing
/// past the end.
fn large_fill<E: Elem>(rng: &mut Rng) {
    let name = format!("fill_{}", E::DTYPE.name());
    let n = STREAMING_FILL_BYTES / size_of::<E>() + 37;
    let value: E = rng.any();
    let mut dst = Buf::filled(n * size_of::<E>() + GUARD, 0xA5);
    assert_eq!(launch(&name, (7, 1, 1), &[dst.arg(), u64_arg(n as u64), scalar_arg(value)]), 0, "{name}");
    let got = dst.elems::<E>(n);
    assert!(got.iter().all(|&x| same(x, value.canonical())), "{name}: an element is not the value");
    assert_untouched::<E>(&name, &dst, n, 0xA5);
}

#[test]
fn large_fills_stream_every_element() {
    let mut rng = Rng::new(3);
    large_fill::<u8>(&mut rng);
    large_fill::<half::f16>(&mut rng);
    large_fill::<f32>(&mut rng);
    large_fill::<f64>(&mut rng);
    large_fill::<crate::dtype::Bool>(&mut rng);
}

#[test]
fn fill_every_type() {
    let mut rng = Rng::new(1);
    macro_rules! run {
        ($t:ty) => {
            fill::<$t>(&mut rng)
        };
    }
    for_each_elem!(run);
}

#[test]
fn add_and_mul_every_type() {
    let mut rng = Rng::new(2);
    macro_rules! run {
        ($t:ty) => {
            binary::<$t>(&mut rng)
        };
    }
    for_each_elem!(run);
}

#[test]
fn narrow_arithmetic_rounds_and_wraps() {
    let run = |name: &str, a: &[u8], b: &[u8], n: u64| {
        let (mut a, mut b, mut out) = (Buf::of(a), Buf::of(b), Buf::zeroed(a.len()));
        assert_eq!(launch(name, (1, 1, 1), &[a.arg(), b.arg(), out.arg(), u64_arg(n)]), 0);
        out.bytes().to_vec()
    };
    // i4: 7 + 1 wraps to -8 (0x8), -8 + -1 to 7; low nibble first.
    assert_eq!(run("add_i4", &[0x87], &[0xF1], 2), [0x78]);
    // f4: 6 + 6 saturates to 6 (0x7); 1.5 + 1 = 2.5 ties to 2 (0x4).
    assert_eq!(run("add_f4e2m1", &[0x37], &[0x27], 2), [0x47]);
    // e4m3: 448 * 2 saturates; NaN stays NaN.
    assert_eq!(run("mul_f8e4m3", &[0x7E, 0x7F], &[0x40, 0x38], 2), [0x7E, 0x7F]);
    // u8 and i8 wrap.
    assert_eq!(run("add_u8", &[250, 3], &[10, 4], 2), [4, 7]);
    assert_eq!(run("mul_i8", &[0x10], &[0x10], 1), [0]);
    // bool: or / and of any nonzero bytes, written as 0 or 1.
    assert_eq!(run("add_bool", &[0, 7, 0], &[0, 0, 9], 3), [0, 1, 1]);
    assert_eq!(run("mul_bool", &[2, 7, 0], &[5, 0, 9], 3), [1, 0, 0]);
}
