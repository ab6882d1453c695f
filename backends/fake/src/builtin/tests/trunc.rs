//! `cast_trunc_<s>_<d>` for all 196 pairs, on every grid, against the
//! reference of `dtype::tests_trunc`; and values written out by hand.
use super::cast::check_cast;
use super::*;
use crate::dtype::tests_trunc::reference;
use crate::dtype::Elem;

/// `cast_trunc_<s>_<d>`: half any bits, half values near the integers
/// (where truncation and rounding differ) and E4M3's limit.
struct Truncating;

impl PairTest for Truncating {
    fn pair<S: Elem, D: Elem>(rng: &mut Rng) {
        let name = format!("cast_trunc_{}_{}", S::DTYPE.name(), D::DTYPE.name());
        for grid in GRIDS {
            for n in [0usize, 1, 37, 130] {
                let src: Vec<S> = (0..n)
                    .map(|i| if i % 2 == 0 { rng.any() } else { S::from_f64((rng.next() % 4000) as f64 / 4.0 - 500.0) })
                    .collect();
                check_cast(&name, grid, &src, reference::<S, D>);
            }
        }
    }
}

#[test]
fn trunc_every_pair_on_every_grid() {
    every_pair::<Truncating>(&mut Rng::new(21));
}

#[test]
fn trunc_known_values() {
    let run = |name: &str, src: &[u8], n: u64, out: usize| {
        let (mut s, mut d) = (Buf::of(src), Buf::zeroed(out));
        assert_eq!(launch(name, (2, 1, 1), &[s.arg(), d.arg(), u64_arg(n)]), 0, "{name}");
        d.bytes().to_vec()
    };
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let i32s = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    // Toward zero; NaN 0; saturating.
    let src = f32s(&[2.7, -2.7, 0.5, -0.5, f32::NAN, 3e9, -3e9, 7.99]);
    assert_eq!(run("cast_trunc_f32_i32", &src, 8, 32), i32s(&[2, -2, 0, 0, 0, i32::MAX, i32::MIN, 7]));
    // The rounding cast differs.
    assert_eq!(run("cast_f32_i32", &src, 8, 32), i32s(&[3, -3, 0, 0, 0, i32::MAX, i32::MIN, 8]));
    assert_eq!(run("cast_trunc_f32_u8", &f32s(&[-1.5, 255.9, 300.7, 1.9]), 4, 4), [0, 255, 255, 1]);
    // i4, low nibble first: 7.9 -> 7, -8.9 -> -8 (0x8), -1.5 -> -1, 2.5 -> 2.
    assert_eq!(run("cast_trunc_f32_i4", &f32s(&[7.9, -8.9, -1.5, 2.5]), 4, 2), [0x87, 0x2F]);
    // E4M3: 448, the tie 464 -> 448, above -> NaN, inf -> NaN with sign.
    let src = f32s(&[448.0, 464.0, 465.0, f32::NEG_INFINITY, 17.0, -1e6]);
    assert_eq!(run("cast_trunc_f32_f8e4m3", &src, 6, 6), [0x7E, 0x7E, 0x7F, 0xFF, 0x58, 0xFF]);
    assert_eq!(run("cast_f32_f8e4m3", &src, 6, 6), [0x7E, 0x7E, 0x7E, 0xFE, 0x58, 0xFE]);
    assert_eq!(run("cast_trunc_i32_f8e4m3", &i32s(&[464, -465, 3]), 3, 3), [0x7E, 0xFF, 0x44]);
    // E2M1 still saturates; f16 rounds as cast does.
    assert_eq!(run("cast_trunc_f32_f4e2m1", &f32s(&[100.0, 2.5]), 2, 1), [0x47]);
}
