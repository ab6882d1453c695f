//! `cast_<s>_<d>` for all 196 pairs, on every grid, and in place.
use super::*;
use crate::dtype::{Class, Elem};

/// What a cast must give, by the slow exact route: bits kept for the same
/// type; 0/1 through bool; from `i64` for integer sources; from the exact
/// `f64` value, rounded once, for float sources.
pub(super) fn reference<S: Elem, D: Elem>(s: S) -> D {
    if S::DTYPE == D::DTYPE {
        D::from_bits(s.to_bits())
    } else if S::DTYPE.class() == Class::Bool || D::DTYPE.class() == Class::Bool {
        D::from_bool(s.is_nonzero())
    } else if S::DTYPE.class() == Class::Int {
        D::from_i64(s.to_i64())
    } else {
        D::from_f64(s.to_f64())
    }
}

/// Casts `src` with the kernel `name` (`(const S *src, D *dst, uint64_t
/// n)`) on `grid`, and checks the result against `reference`, that no byte
/// past the end is written (nor the high nibble after an odd packed end),
/// and that the source is unchanged.
pub(super) fn check_cast<S: Elem, D: Elem>(name: &str, grid: (u32, u32, u32), src: &[S], reference: fn(S) -> D) {
    let n = src.len();
    let what = format!("{name} n={n} grid={grid:?}");
    let want: Vec<D> = src.iter().map(|&s| reference(s)).collect();
    let mut sb = Buf::of(src);
    let used = D::DTYPE.bytes_for(n as u64).unwrap();
    let mut db = Buf::filled(used + 2, 0xC3);
    assert_eq!(launch(name, grid, &[sb.arg(), db.arg(), u64_arg(n as u64)]), 0, "{what}");
    check(&what, &db.elems::<D>(n), &want);
    assert!(db.bytes()[used..].iter().all(|&b| b == 0xC3), "{what}: past the end");
    if D::DTYPE.is_packed() && n % 2 == 1 {
        assert_eq!(db.bytes()[used - 1] >> 4, 0xC, "{what}: the nibble after the end");
    }
    check(&format!("{what} src"), &sb.elems::<S>(n), src);
}

/// `cast_<s>_<d>` on any bits of the source type.
struct Casts;

impl PairTest for Casts {
    fn pair<S: Elem, D: Elem>(rng: &mut Rng) {
        let name = format!("cast_{}_{}", S::DTYPE.name(), D::DTYPE.name());
        for grid in GRIDS {
            for n in [0usize, 1, 37, 130] {
                let src: Vec<S> = (0..n).map(|_| rng.any()).collect();
                check_cast(&name, grid, &src, reference::<S, D>);
            }
        }
    }
}

#[test]
fn every_pair_on_every_grid() {
    every_pair::<Casts>(&mut Rng::new(3));
}

/// Casts between types of the same width may work in place.
fn in_place<S: Elem, D: Elem>(rng: &mut Rng) {
    let name = format!("cast_{}_{}", S::DTYPE.name(), D::DTYPE.name());
    for grid in GRIDS {
        let n = 75;
        let src: Vec<S> = (0..n).map(|_| rng.any()).collect();
        let want: Vec<D> = src.iter().map(|&s| reference(s)).collect();
        let mut buf = Buf::of(&src);
        assert_eq!(launch(&name, grid, &[buf.arg(), buf.arg(), u64_arg(n as u64)]), 0, "{name}");
        check(&format!("{name} in place"), &buf.elems::<D>(n), &want);
    }
}

#[test]
fn same_width_in_place() {
    use crate::dtype::{Bool, F4E2M1, F8E4M3, F8E5M2, I4};
    let mut rng = Rng::new(4);
    in_place::<f32, i32>(&mut rng);
    in_place::<i32, f32>(&mut rng);
    in_place::<f64, i64>(&mut rng);
    in_place::<half::f16, half::bf16>(&mut rng);
    in_place::<i16, half::f16>(&mut rng);
    in_place::<F8E4M3, F8E5M2>(&mut rng);
    in_place::<u8, Bool>(&mut rng);
    in_place::<I4, F4E2M1>(&mut rng);
    in_place::<F4E2M1, I4>(&mut rng);
    in_place::<i8, i8>(&mut rng);
}

#[test]
fn other_overlaps_are_refused() {
    let mut buf = Buf::zeroed(64);
    let base = buf.arg();
    let p = u64::from_ne_bytes(base.clone().try_into().unwrap());
    // f32 -> f64 from the same start: the widths differ.
    assert_eq!(launch("cast_f32_f64", (1, 1, 1), &[base.clone(), base.clone(), u64_arg(4)]), 1);
    // i32 -> i32 shifted by one element.
    let shifted = (p + 4).to_ne_bytes().to_vec();
    assert_eq!(launch("cast_i32_i32", (1, 1, 1), &[base.clone(), shifted, u64_arg(4)]), 1);
    // Apart: fine.
    let apart = (p + 16).to_ne_bytes().to_vec();
    assert_eq!(launch("cast_i32_i32", (1, 1, 1), &[base, apart, u64_arg(4)]), 0);
}
