//! `sum_<t>` for every type and grid, against exact sums.
use super::*;
use crate::dtype::{for_each_elem, Class, Elem};

/// The exact sum (the test values keep float sums exact in `f32`), rounded
/// once; wrapping for integers; any for bool.
fn reference<E: Elem>(x: &[E]) -> E {
    match E::DTYPE.class() {
        // Sums start from -0.0 (so negative zeros add up to -0.0), but an
        // empty sum is +0.0.
        Class::Float if x.is_empty() => E::from_f64(0.0),
        Class::Float => E::from_f64(x.iter().fold(-0.0, |s, v| s + v.to_f64())),
        Class::Int => E::from_i64(x.iter().fold(0i64, |s, v| s.wrapping_add(v.to_i64()))),
        Class::Bool => E::from_bool(x.iter().any(|v| v.is_nonzero())),
    }
}

fn sum<E: Elem>(rng: &mut Rng) {
    let name = format!("sum_{}", E::DTYPE.name());
    for grid in GRIDS {
        // 5000 crosses a run boundary (4096) and leaves a lane remainder.
        for n in [0usize, 1, 2, 37, 5000] {
            let what = format!("{name} n={n} grid={grid:?}");
            let x: Vec<E> = (0..n).map(|_| rng.nice()).collect();
            let mut xb = Buf::of(&x);
            let mut out = Buf::filled(4 + E::DTYPE.bytes_for(1).unwrap(), 0x5A);
            assert_eq!(launch(&name, grid, &[xb.arg(), out.arg(), u64_arg(n as u64)]), 0, "{what}");
            check(&what, &out.elems::<E>(1), &[reference(&x)]);
            let used = E::DTYPE.bytes_for(1).unwrap();
            assert!(out.bytes()[used..].iter().all(|&b| b == 0x5A), "{what}: past out[0]");
            if E::DTYPE.is_packed() {
                assert_eq!(out.bytes()[0] >> 4, 0x5, "{what}: the nibble of out[1]");
            }
        }
    }
}

#[test]
fn sum_every_type() {
    let mut rng = Rng::new(5);
    macro_rules! run {
        ($t:ty) => {
            sum::<$t>(&mut rng)
        };
    }
    for_each_elem!(run);
}

#[test]
fn sum_edge_cases() {
    let run = |name: &str, x: &mut Buf, n: u64, out_len: usize| {
        let mut out = Buf::filled(out_len, 0xFF);
        assert_eq!(launch(name, (3, 1, 1), &[x.arg(), out.arg(), u64_arg(n)]), 0, "{name}");
        out.bytes().to_vec()
    };
    // Negative zeros sum to -0.0; an empty sum is +0.0.
    let mut zeros = Buf::of(&[-0.0f32; 3]);
    assert_eq!(run("sum_f32", &mut zeros, 3, 4), (-0.0f32).to_le_bytes());
    assert_eq!(run("sum_f32", &mut zeros, 0, 4), 0.0f32.to_le_bytes());
    // i8 wraps; out may be x[0] itself.
    let mut bytes = Buf::of(&[100i8, 100, 100]);
    let arg = bytes.arg();
    assert_eq!(launch("sum_i8", (2, 1, 1), &[arg.clone(), arg, u64_arg(3)]), 0);
    assert_eq!(bytes.bytes()[0] as i8, 44);
    // bf16: the sum of many small values beside a large one is rounded
    // once from the f32 total, not once per addition.
    let mut x = vec![half::bf16::from_f32(0.25); 1024];
    x[0] = half::bf16::from_f32(256.0);
    let mut xb = Buf::of(&x);
    let got = run("sum_bf16", &mut xb, 1024, 2);
    assert_eq!(half::bf16::from_le_bytes([got[0], got[1]]).to_f32(), 512.0);
}

#[test]
fn f32_sum_is_accurate() {
    let mut rng = Rng::new(6);
    let n = 200_000;
    let x: Vec<f32> = (0..n).map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32).collect();
    let exact: f64 = x.iter().map(|&v| f64::from(v)).sum();
    let mut xb = Buf::of(&x);
    let mut out = Buf::zeroed(4);
    assert_eq!(launch("sum_f32", (4, 1, 1), &[xb.arg(), out.arg(), u64_arg(n as u64)]), 0);
    let got = f64::from(out.elems::<f32>(1)[0]);
    // Sequential f32 summation is off by about 1e-4 here.
    assert!(((got - exact) / exact).abs() < 1e-6, "{got} vs {exact}");
}
