//! `matmul_<t>` for every type and grid, against exact dot products.
use super::*;
use crate::dtype::{for_each_elem, Class, Elem};

/// `c = a * b` computed exactly (the test values keep float dot products
/// exact in `f32`), rounded once; integers wrap; bool is or of ands.
fn reference<E: Elem>(a: &[E], b: &[E], m: usize, n: usize, k: usize) -> Vec<E> {
    let mut c = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let terms = (0..k).map(|l| (a[i * k + l], b[l * n + j]));
            c.push(match E::DTYPE.class() {
                Class::Float if k == 0 => E::from_f64(0.0),
                Class::Float => E::from_f64(terms.fold(-0.0, |s, (x, y)| s + x.to_f64() * y.to_f64())),
                Class::Int => {
                    E::from_i64(terms.fold(0i64, |s, (x, y)| s.wrapping_add(x.to_i64().wrapping_mul(y.to_i64()))))
                }
                Class::Bool => E::from_bool(terms.clone().any(|(x, y)| x.is_nonzero() && y.is_nonzero())),
            });
        }
    }
    c
}

fn matmul<E: Elem>(rng: &mut Rng, shapes: &[(usize, usize, usize)], grids: &[(u32, u32, u32)]) {
    let name = format!("matmul_{}", E::DTYPE.name());
    for &(m, n, k) in shapes {
        for &grid in grids {
            let what = format!("{name} {m}x{n}x{k} grid={grid:?}");
            let a: Vec<E> = (0..m * k).map(|_| rng.nice()).collect();
            let b: Vec<E> = (0..k * n).map(|_| rng.nice()).collect();
            let (mut ab, mut bb) = (Buf::of(&a), Buf::of(&b));
            let used = E::DTYPE.bytes_for((m * n) as u64).unwrap();
            let mut c = Buf::filled(used + 2, 0x5A);
            let args = [ab.arg(), bb.arg(), c.arg(), u64_arg(m as u64), u64_arg(n as u64), u64_arg(k as u64)];
            assert_eq!(launch(&name, grid, &args), 0, "{what}");
            check(&what, &c.elems::<E>(m * n), &reference(&a, &b, m, n, k));
            assert!(c.bytes()[used..].iter().all(|&x| x == 0x5A), "{what}: past the end");
            if E::DTYPE.is_packed() && m * n % 2 == 1 {
                assert_eq!(c.bytes()[used - 1] >> 4, 0x5, "{what}: the nibble after the end");
            }
        }
    }
}

/// Small shapes: remainders of the micro-kernel, odd packed rows, empty
/// dimensions.
const SMALL: [(usize, usize, usize); 7] =
    [(1, 1, 1), (3, 5, 2), (6, 9, 17), (5, 3, 4), (13, 11, 0), (0, 4, 4), (4, 0, 3)];

#[test]
fn matmul_every_type() {
    let mut rng = Rng::new(7);
    macro_rules! run {
        ($t:ty) => {
            matmul::<$t>(&mut rng, &SMALL, &GRIDS)
        };
    }
    for_each_elem!(run);
}

#[test]
fn matmul_across_tiles() {
    // Past every tile size (rows 64, columns 256, depth 128), with odd
    // remainders.
    let mut rng = Rng::new(8);
    let shapes = [(67, 263, 131)];
    let grids = [(1, 1, 1), (7, 1, 1)];
    matmul::<f32>(&mut rng, &shapes, &grids);
    matmul::<crate::dtype::I4>(&mut rng, &shapes, &grids[1..]);
    matmul::<half::bf16>(&mut rng, &[(9, 260, 130)], &grids[1..]);
}
