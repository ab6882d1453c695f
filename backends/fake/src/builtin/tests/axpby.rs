//! `axpby_<t>` for every type, on every grid, in place too, against a
//! plain reference.
use super::*;
use crate::dtype::{for_each_elem, Class, Elem};

/// `alpha * a + beta * b` as the kernel defines it, computed here through
/// `f64`: for `f64` itself directly; for the other floats each product and
/// the sum rounded to `f32` (an `f64` product of two `f32` values is exact,
/// and an `f64` sum of two rounds the same as an `f32` sum would), then
/// rounded to the type; integers wrap; bool is `(alpha && a) || (beta && b)`.
fn reference<E: Elem>(alpha: E, beta: E, a: E, b: E) -> E {
    match E::DTYPE.class() {
        Class::Float if E::DTYPE.bits() == 64 => E::from_f64(alpha.to_f64() * a.to_f64() + beta.to_f64() * b.to_f64()),
        Class::Float => {
            let f32_of = |x: f64| f64::from(x as f32);
            let p = f32_of(alpha.to_f64() * a.to_f64());
            let q = f32_of(beta.to_f64() * b.to_f64());
            E::from_f64(f32_of(p + q))
        }
        Class::Int => {
            let (p, q) = (alpha.to_i64().wrapping_mul(a.to_i64()), beta.to_i64().wrapping_mul(b.to_i64()));
            E::from_i64(p.wrapping_add(q))
        }
        Class::Bool => E::from_bool((alpha.is_nonzero() && a.is_nonzero()) || (beta.is_nonzero() && b.is_nonzero())),
    }
}

fn axpby<E: Elem>(rng: &mut Rng) {
    let name = format!("axpby_{}", E::DTYPE.name());
    for grid in GRIDS {
        for n in [0usize, 1, 2, 37, 301] {
            let what = format!("{name} n={n} grid={grid:?}");
            // Nice values half the time (exact results), any bits else.
            let pick = |rng: &mut Rng| if rng.next() % 2 == 0 { rng.nice::<E>() } else { rng.any::<E>() };
            let (alpha, beta) = (pick(rng), pick(rng));
            let a: Vec<E> = (0..n).map(|_| pick(rng)).collect();
            let b: Vec<E> = (0..n).map(|_| pick(rng)).collect();
            let want: Vec<E> = a.iter().zip(&b).map(|(&x, &y)| reference(alpha, beta, x, y)).collect();
            let (mut ab, mut bb) = (Buf::of(&a), Buf::of(&b));
            let used = E::DTYPE.bytes_for(n as u64).unwrap();
            let mut out = Buf::filled(used + 3, 0x5A);
            let scalars = || {
                let (mut p, mut q) = (scalar_arg(alpha), scalar_arg(beta));
                if E::DTYPE.is_packed() {
                    // The high nibble of a 4-bit scalar is not part of it.
                    p[0] |= 0x90;
                    q[0] |= 0x60;
                }
                (p, q)
            };
            let (p, q) = scalars();
            let args = [ab.arg(), bb.arg(), out.arg(), u64_arg(n as u64), p.clone(), q.clone()];
            assert_eq!(launch(&name, grid, &args), 0, "{what}");
            check(&what, &out.elems::<E>(n), &want);
            assert!(out.bytes()[used..].iter().all(|&x| x == 0x5A), "{what}: past the end");
            if E::DTYPE.is_packed() && n % 2 == 1 {
                assert_eq!(out.bytes()[used - 1] >> 4, 0x5, "{what}: the nibble after the end");
            }
            // In place: out = b, then out = a = b.
            let args = [ab.arg(), bb.arg(), bb.arg(), u64_arg(n as u64), p.clone(), q.clone()];
            assert_eq!(launch(&name, grid, &args), 0, "{what} out=b");
            check(&format!("{what} out=b"), &bb.elems::<E>(n), &want);
            let twice: Vec<E> = a.iter().map(|&x| reference(alpha, beta, x, x)).collect();
            let args = [ab.arg(), ab.arg(), ab.arg(), u64_arg(n as u64), p, q];
            assert_eq!(launch(&name, grid, &args), 0, "{what} out=a=b");
            check(&format!("{what} out=a=b"), &ab.elems::<E>(n), &twice);
        }
    }
}

#[test]
fn axpby_every_type() {
    let mut rng = Rng::new(31);
    macro_rules! run {
        ($t:ty) => {
            axpby::<$t>(&mut rng)
        };
    }
    for_each_elem!(run);
}

#[test]
fn axpby_known_values() {
    let run = |name: &str, a: &[u8], b: &[u8], n: u64, alpha: &[u8], beta: &[u8]| {
        let (mut a, mut b, mut out) = (Buf::of(a), Buf::of(b), Buf::zeroed(a.len()));
        let args = [a.arg(), b.arg(), out.arg(), u64_arg(n), alpha.to_vec(), beta.to_vec()];
        assert_eq!(launch(name, (2, 1, 1), &args), 0, "{name}");
        out.bytes().to_vec()
    };
    // PyTorch's sub with alpha 2: a - 2b.
    let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let got = run("axpby_f32", &f(&[1.0, 10.0]), &f(&[0.5, 2.5]), 2, &1f32.to_le_bytes(), &(-2f32).to_le_bytes());
    assert_eq!(got, f(&[0.0, 5.0]));
    // i8 wraps: 100 * 2 + 1 * 1.
    assert_eq!(run("axpby_i8", &[100], &[1], 1, &[2], &[1]), [201u8]);
    // i4: 7 * 1 + 1 * 1 wraps to -8; low nibble first.
    assert_eq!(run("axpby_i4", &[0x17], &[0x11], 2, &[1], &[1]), [0x28]);
    // bool: (alpha && a) || (beta && b), written 0 or 1.
    assert_eq!(run("axpby_bool", &[5, 0, 5, 0], &[0, 3, 3, 0], 4, &[2], &[0]), [1, 0, 1, 0]);
    assert_eq!(run("axpby_bool", &[5, 0, 5, 0], &[0, 3, 3, 0], 4, &[0], &[7]), [0, 1, 1, 0]);
    // E4M3: computed in f32, saturating on the way back: 448 + 448.
    assert_eq!(run("axpby_f8e4m3", &[0x7E], &[0x7E], 1, &[0x38], &[0x38]), [0x7E]);
}

#[test]
fn axpby_refuses_partial_overlaps() {
    let mut buf = Buf::zeroed(64);
    let base = buf.arg();
    let shifted = (u64::from_ne_bytes(base.clone().try_into().unwrap()) + 4).to_ne_bytes().to_vec();
    let one = 1.0f32.to_ne_bytes().to_vec();
    let args = [base.clone(), base.clone(), shifted, u64_arg(4), one.clone(), one.clone()];
    assert_eq!(launch("axpby_f32", (1, 1, 1), &args), xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE as i32);
    let null = ptr_arg(std::ptr::null_mut());
    let args = [null, base.clone(), base, u64_arg(4), one.clone(), one];
    assert_eq!(launch("axpby_f32", (1, 1, 1), &args), xdal_abi::xdal_status::XDAL_ERROR_NULL_POINTER as i32);
}
