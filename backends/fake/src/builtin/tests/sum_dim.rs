//! `sum_dim_<t>` for every type, on every grid, against exact sums; and
//! bit for bit against `sum_<t>` of each slice, whatever the grid.
use super::*;
use crate::dtype::{for_each_elem, Class, Elem};

/// Shapes `(outer, reduce, inner)`: empty ones, `inner` 1 (contiguous
/// slices), odd widths, tiles of 16 outputs and their remainders, a
/// reduction over more than one run of 4096.
const SHAPES: [(usize, usize, usize); 10] = [
    (0, 3, 2),
    (3, 0, 2),
    (1, 1, 1),
    (4, 7, 1),
    (3, 5, 2),
    (2, 9, 17),
    (5, 3, 40),
    (1, 37, 33),
    (2, 4100, 1),
    (1, 4099, 3),
];

/// The exact sum of `x[o][.][i]` (the test values keep float sums exact),
/// rounded once; wrapping for integers; any for bool.
fn reference<E: Elem>(x: &[E], reduce: usize, inner: usize, o: usize, i: usize) -> E {
    let values = (0..reduce).map(|r| x[(o * reduce + r) * inner + i]);
    match E::DTYPE.class() {
        Class::Float if reduce == 0 => E::from_f64(0.0),
        Class::Float => E::from_f64(values.fold(-0.0, |s, v| s + v.to_f64())),
        Class::Int => E::from_i64(values.fold(0i64, |s, v| s.wrapping_add(v.to_i64()))),
        Class::Bool => E::from_bool(values.clone().any(|v| v.is_nonzero())),
    }
}

fn sum_dim<E: Elem>(rng: &mut Rng) {
    let name = format!("sum_dim_{}", E::DTYPE.name());
    for (outer, reduce, inner) in SHAPES {
        let x: Vec<E> = (0..outer * reduce * inner).map(|_| rng.nice()).collect();
        let mut want = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                want.push(reference(&x, reduce, inner, o, i));
            }
        }
        let mut xb = Buf::of(&x);
        for grid in GRIDS {
            let what = format!("{name} [{outer}, {reduce}, {inner}] grid={grid:?}");
            let used = E::DTYPE.bytes_for((outer * inner) as u64).unwrap();
            let mut out = Buf::filled(used + 3, 0x5A);
            let args = [xb.arg(), out.arg(), u64_arg(outer as u64), u64_arg(reduce as u64), u64_arg(inner as u64)];
            assert_eq!(launch(&name, grid, &args), 0, "{what}");
            check(&what, &out.elems::<E>(outer * inner), &want);
            assert!(out.bytes()[used..].iter().all(|&b| b == 0x5A), "{what}: past the end");
            if E::DTYPE.is_packed() && outer * inner % 2 == 1 {
                assert_eq!(out.bytes()[used - 1] >> 4, 0x5, "{what}: the nibble after the end");
            }
        }
    }
}

#[test]
fn sum_dim_every_type() {
    let mut rng = Rng::new(41);
    macro_rules! run {
        ($t:ty) => {
            sum_dim::<$t>(&mut rng)
        };
    }
    for_each_elem!(run);
}

/// With rounding (any finite values), every output has the bits `sum_<t>`
/// gives for its slice, copied out contiguously.
fn same_as_sum<E: Elem>(rng: &mut Rng, outer: usize, reduce: usize, inner: usize) {
    let x: Vec<E> = (0..outer * reduce * inner)
        .map(|_| E::from_f64((rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 200.0 - 100.0))
        .collect();
    let mut xb = Buf::of(&x);
    let t = E::DTYPE.name();
    for grid in GRIDS {
        let mut out = Buf::zeroed(E::DTYPE.bytes_for((outer * inner) as u64).unwrap());
        let args = [xb.arg(), out.arg(), u64_arg(outer as u64), u64_arg(reduce as u64), u64_arg(inner as u64)];
        assert_eq!(launch(&format!("sum_dim_{t}"), grid, &args), 0);
        let got = out.elems::<E>(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                let slice: Vec<E> = (0..reduce).map(|r| x[(o * reduce + r) * inner + i]).collect();
                let (mut sb, mut one) = (Buf::of(&slice), Buf::zeroed(8));
                assert_eq!(launch(&format!("sum_{t}"), (1, 1, 1), &[sb.arg(), one.arg(), u64_arg(reduce as u64)]), 0);
                let want = one.elems::<E>(1)[0];
                assert_eq!(
                    got[o * inner + i].to_bits(),
                    want.to_bits(),
                    "sum_dim_{t} [{outer}, {reduce}, {inner}] ({o}, {i}) grid={grid:?}"
                );
            }
        }
    }
}

#[test]
fn sum_dim_matches_sum_bit_for_bit() {
    let mut rng = Rng::new(42);
    same_as_sum::<f32>(&mut rng, 2, 9000, 1);
    same_as_sum::<f32>(&mut rng, 2, 9000, 3);
    same_as_sum::<f32>(&mut rng, 1, 300, 21);
    same_as_sum::<half::bf16>(&mut rng, 3, 5000, 2);
    same_as_sum::<f64>(&mut rng, 2, 4500, 17);
    same_as_sum::<crate::dtype::F4E2M1>(&mut rng, 3, 100, 5);
}

#[test]
fn sum_dim_errors() {
    let invalid = xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE as i32;
    let mut x = Buf::zeroed(256);
    let mut out = Buf::zeroed(64);
    let (px, po) = (x.arg(), out.arg());
    let run = |x: &[u8], out: &[u8], shape: [u64; 3]| {
        let args = [x.to_vec(), out.to_vec(), u64_arg(shape[0]), u64_arg(shape[1]), u64_arg(shape[2])];
        launch("sum_dim_f32", (2, 1, 1), &args)
    };
    assert_eq!(run(&px, &po, [2, 4, 2]), 0);
    // out inside x.
    let inside = (u64::from_ne_bytes(px.clone().try_into().unwrap()) + 32).to_ne_bytes().to_vec();
    assert_eq!(run(&px, &inside, [2, 4, 2]), invalid);
    assert_eq!(run(&px, &px, [2, 4, 2]), invalid);
    // Sizes that overflow.
    assert_eq!(run(&px, &po, [1 << 32, 1 << 32, 2]), invalid);
    assert_eq!(run(&px, &po, [1 << 62, 0, 1 << 4]), invalid);
    // NULL arrays, unless empty.
    let null = ptr_arg(std::ptr::null_mut());
    assert_eq!(run(&null, &po, [2, 4, 2]), xdal_abi::xdal_status::XDAL_ERROR_NULL_POINTER as i32);
    assert_eq!(run(&px, &null, [2, 4, 2]), xdal_abi::xdal_status::XDAL_ERROR_NULL_POINTER as i32);
    assert_eq!(run(&null, &po, [2, 0, 2]), 0);
    // Misaligned.
    let odd = (u64::from_ne_bytes(po.clone().try_into().unwrap()) + 1).to_ne_bytes().to_vec();
    assert_eq!(run(&px, &odd, [2, 4, 2]), invalid);
}
