//! What the kernels refuse (NULL arrays with elements, sizes that
//! overflow, misaligned arrays, overlaps, bad shapes) and the neighbouring
//! cases they accept: both backends must agree on every one, and neither
//! may touch memory when it refuses.
use super::*;

/// A pointer argument at `offset` bytes into buffer `i`.
fn at(i: usize, offset: usize) -> Arg {
    Arg::Buffer(i, offset)
}

/// `count` random buffers of `len` bytes.
fn buffers(count: usize, len: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    (0..count).map(|_| rng.bytes(len)).collect()
}

/// Kernel, what, case: the dense kernels' refusals and neighbours.
fn dense_cases(rng: &mut Rng) -> Vec<(&'static str, &'static str, Case)> {
    let mut b = |n| buffers(n, 64, rng);
    let four = bytes(&[0; 4]);
    vec![
        ("fill_f32", "NULL dst", Case { buffers: vec![], args: vec![bytes(&NULL), count(3), four.clone()] }),
        ("fill_f32", "NULL dst, n 0", Case { buffers: vec![], args: vec![bytes(&NULL), count(0), four.clone()] }),
        ("fill_f32", "misaligned", Case { buffers: b(1), args: vec![at(0, 2), count(3), four.clone()] }),
        ("fill_f32", "misaligned, n 0", Case { buffers: b(1), args: vec![at(0, 2), count(0), four.clone()] }),
        ("fill_i4", "odd address", Case { buffers: b(1), args: vec![at(0, 3), count(5), bytes(&[0x37])] }),
        ("fill_f64", "n overflows", Case { buffers: b(1), args: vec![at(0, 0), count(u64::MAX), bytes(&[0; 8])] }),
        ("add_f64", "out overlaps a", Case { buffers: b(2), args: vec![at(0, 0), at(1, 0), at(0, 8), count(4)] }),
        ("add_i8", "out is b", Case { buffers: b(2), args: vec![at(0, 0), at(1, 0), at(1, 0), count(9)] }),
        ("mul_u8", "NULL b", Case { buffers: b(2), args: vec![at(0, 0), bytes(&NULL), at(1, 0), count(9)] }),
        (
            "axpby_i16",
            "misaligned out",
            Case { buffers: b(3), args: vec![at(0, 0), at(1, 0), at(2, 1), count(3), bytes(&[1, 0]), bytes(&[2, 0])] },
        ),
        (
            "cast_f32_f16",
            "in place, wider to narrower",
            Case { buffers: b(1), args: vec![at(0, 0), at(0, 0), count(8)] },
        ),
        ("cast_f32_i32", "in place, equal widths", Case { buffers: b(1), args: vec![at(0, 0), at(0, 0), count(8)] }),
        ("cast_i4_f4e2m1", "in place, packed", Case { buffers: b(1), args: vec![at(0, 0), at(0, 0), count(9)] }),
        ("cast_trunc_f64_i8", "dst inside src", Case { buffers: b(1), args: vec![at(0, 0), at(0, 8), count(4)] }),
        ("sum_f32", "NULL out, n 0", Case { buffers: vec![], args: vec![bytes(&NULL), bytes(&NULL), count(0)] }),
        ("sum_f32", "NULL x, n 0", Case { buffers: b(1), args: vec![bytes(&NULL), at(0, 0), count(0)] }),
        ("sum_bf16", "misaligned out", Case { buffers: b(2), args: vec![at(0, 0), at(1, 1), count(4)] }),
        (
            "sum_dim_f32",
            "out overlaps x",
            Case { buffers: b(1), args: vec![at(0, 0), at(0, 16), count(2), count(2), count(2)] },
        ),
        (
            "sum_dim_i4",
            "outputs overflow",
            Case { buffers: b(2), args: vec![at(0, 0), at(1, 0), count(1 << 40), count(0), count(1 << 40)] },
        ),
        (
            "sum_dim_u8",
            "reduce 0, NULL x",
            Case { buffers: b(1), args: vec![bytes(&NULL), at(0, 0), count(2), count(0), count(3)] },
        ),
        (
            "matmul_f16",
            "c overlaps b",
            Case { buffers: b(2), args: vec![at(0, 0), at(1, 0), at(1, 4), count(2), count(2), count(2)] },
        ),
        (
            "matmul_i32",
            "m x k overflows",
            Case { buffers: b(3), args: vec![at(0, 0), at(1, 0), at(2, 0), count(1 << 40), count(0), count(1 << 40)] },
        ),
        (
            "matmul_bool",
            "m 0, NULL a and c",
            Case { buffers: b(1), args: vec![bytes(&NULL), at(0, 0), bytes(&NULL), count(0), count(3), count(2)] },
        ),
    ]
}

/// A strided case: the two pointers, then ndim, sizes and strides.
fn strided(
    buffers: Vec<Vec<u8>>,
    src: Arg,
    dst: Arg,
    ndim: u64,
    sizes: &[u64],
    strides: [&[i64]; 2],
    rng: &mut Rng,
) -> Case {
    let mut args = vec![src, dst, count(ndim), bytes(&words(sizes, rng))];
    args.extend(strides.map(|s| bytes(&words(s, rng))));
    Case { buffers, args }
}

fn strided_cases(rng: &mut Rng) -> Vec<(&'static str, &'static str, Case)> {
    let b = |n: usize, rng: &mut Rng| buffers(n, 256, rng);
    let two = b(2, rng);
    let one = b(1, rng);
    vec![
        (
            "copy_strided_f32",
            "ndim 17",
            strided(two.clone(), at(0, 0), at(1, 0), 17, &[1; 17], [&[1; 17], &[1; 17]], rng),
        ),
        ("copy_strided_f32", "dst stride 0", strided(two.clone(), at(0, 0), at(1, 0), 1, &[3], [&[1], &[0]], rng)),
        (
            "copy_strided_f32",
            "dst stride 0, size 1",
            strided(two.clone(), at(0, 0), at(1, 0), 1, &[1], [&[1], &[0]], rng),
        ),
        ("copy_strided_i16", "overlapping", strided(one.clone(), at(0, 0), at(0, 4), 1, &[8], [&[1], &[1]], rng)),
        (
            "cast_strided_f32_i32",
            "in place, coinciding",
            strided(one.clone(), at(0, 64), at(0, 64), 2, &[2, 2], [&[1, 1], &[1, 1]], rng),
        ),
        (
            "cast_strided_f32_i32",
            "in place",
            strided(one.clone(), at(0, 64), at(0, 64), 2, &[2, 3], [&[-3, 1], &[-3, 1]], rng),
        ),
        (
            "cast_strided_f16_i16",
            "in place, other strides",
            strided(one.clone(), at(0, 64), at(0, 64), 1, &[4], [&[1], &[2]], rng),
        ),
        (
            "cast_strided_trunc_f64_u8",
            "sizes overflow",
            strided(two.clone(), at(0, 0), at(1, 0), 2, &[1 << 40, 1 << 40], [&[1, 1], &[1, 1]], rng),
        ),
        (
            "copy_strided_f8e4m3",
            "offsets beyond 64 bits",
            strided(two.clone(), at(0, 0), at(1, 0), 2, &[5, 3], [&[1 << 62, 1], &[1, 3]], rng),
        ),
        (
            "copy_strided_f64",
            "empty, misaligned",
            strided(two.clone(), at(0, 4), at(1, 0), 2, &[0, 3], [&[1, 1], &[1, 1]], rng),
        ),
        ("copy_strided_f64", "NULL src", strided(two.clone(), bytes(&NULL), at(1, 0), 1, &[3], [&[1], &[1]], rng)),
        (
            "cast_strided_i4_f4e2m1",
            "in place, odd strides",
            strided(one.clone(), at(0, 64), at(0, 64), 2, &[3, 5], [&[7, -1], &[7, -1]], rng),
        ),
        (
            "cast_strided_u8_i4",
            "negative strides",
            strided(two.clone(), at(0, 100), at(1, 100), 1, &[9], [&[-3], &[-5]], rng),
        ),
    ]
}

#[test]
fn refusals_and_their_neighbours() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(8);
    let mut cases = dense_cases(&mut rng);
    cases.extend(strided_cases(&mut rng));
    let fill = |ndim: u64, sizes: &[u64], strides: &[i64], rng: &mut Rng| Case {
        buffers: buffers(1, 256, rng),
        args: vec![at(0, 64), count(ndim), bytes(&words(sizes, rng)), bytes(&words(strides, rng)), bytes(&[0x5A])],
    };
    cases.push(("fill_strided_i4", "dst stride 0", fill(2, &[2, 3], &[0, 1], &mut rng)));
    cases.push(("fill_strided_bool", "ndim 17", fill(17, &[1; 17], &[1; 17], &mut rng)));
    cases.push(("fill_strided_u8", "coinciding", fill(2, &[3, 3], &[1, 1], &mut rng)));
    for (kernel, what, case) in &cases {
        report.check(b, kernel, what, case);
    }
    report.finish("refusals_and_their_neighbours");
}
