//! `copy_strided_<t>`, `cast_strided_<s>_<d>`, `cast_strided_trunc_<s>_<d>`
//! and `fill_strided_<t>` against a plain loop over the logical order, on
//! every grid: contiguous, transposed, broadcast, negative and gapped
//! layouts, 0, 1 and 16 dimensions, packed types with odd nibble strides;
//! every element of the destination buffer around the written ones is
//! checked too.
use super::*;
use crate::dtype::{Bool, Elem, F4E2M1, F8E4M3, F8E5M2, I4};
use half::{bf16, f16};

/// A shape and the strides of the source and destination (the source's
/// unused by fills).
pub(super) struct Case {
    pub sizes: Vec<u64>,
    pub src: Vec<i64>,
    pub dst: Vec<i64>,
}

fn case(sizes: &[u64], src: &[i64], dst: &[i64]) -> Case {
    Case { sizes: sizes.to_vec(), src: src.to_vec(), dst: dst.to_vec() }
}

/// Row-major strides of `sizes`, each dimension padded by `pad` elements
/// (so that with `pad > 0` no two dimensions merge).
fn row_major(sizes: &[u64], pad: i64) -> Vec<i64> {
    let mut strides = vec![0; sizes.len()];
    let mut step = 1i64;
    for k in (0..sizes.len()).rev() {
        strides[k] = step;
        step = step * sizes[k] as i64 + pad;
    }
    strides
}

/// The layouts every kernel runs on.
pub(super) fn cases() -> Vec<Case> {
    let sixteen: Vec<u64> = vec![2, 1, 2, 1, 3, 1, 2, 1, 2, 1, 2, 1, 1, 2, 1, 2];
    let mut column_major = row_major(&sixteen.iter().rev().copied().collect::<Vec<_>>(), 0);
    column_major.reverse();
    vec![
        // A single element (ndim 0), a contiguous vector (the dense path).
        case(&[], &[], &[]),
        case(&[37], &[1], &[1]),
        // Size-1 dimensions and mergeable ones: dense after simplification.
        case(&[3, 1, 4, 5], &[20, 7, 5, 1], &[20, 99, 5, 1]),
        // Every other source element; a reversed source; a reversed
        // destination.
        case(&[29], &[2], &[1]),
        case(&[29], &[-1], &[1]),
        case(&[5, 7], &[7, 1], &[-7, -1]),
        // Transposed source, and transposed destination.
        case(&[5, 7], &[1, 5], &[7, 1]),
        case(&[6, 9], &[9, 1], &[1, 6]),
        // Broadcast along the outer and along the inner dimension.
        case(&[4, 6], &[0, 1], &[6, 1]),
        case(&[4, 6], &[1, 0], &[6, 1]),
        // Gapped and odd strides (odd nibbles for packed types), 3-D.
        case(&[2, 3, 4], &[27, 9, 3], &[13, 4, 1]),
        case(&[3, 2, 5], &[-1, 33, 3], &[1, 3, 7]),
        // 16 dimensions that do not merge.
        case(&sixteen, &column_major, &row_major(&sixteen, 1)),
        // More elements than the grids have blocks, transposed.
        case(&[300, 17], &[1, 300], &[17, 1]),
        // Nothing at all.
        case(&[3, 0, 2], &[1, 1, 1], &[0, 0, 0]),
    ]
}

/// Element offsets of one side, in logical order.
pub(super) fn offsets(sizes: &[u64], strides: &[i64]) -> Vec<i64> {
    let count: u64 = sizes.iter().product();
    (0..count)
        .map(|mut l| {
            let mut offset = 0;
            for k in (0..sizes.len()).rev() {
                offset += (l % sizes[k]) as i64 * strides[k];
                l /= sizes[k];
            }
            offset
        })
        .collect()
}

/// A buffer for elements at `offsets`: the index of offset 0 in it (even,
/// so that it starts a byte of a packed type) and its length (with a few
/// elements of margin on both sides, even).
pub(super) fn extent(offsets: &[i64]) -> (usize, usize) {
    let lo = offsets.iter().copied().min().unwrap_or(0).min(0);
    let hi = offsets.iter().copied().max().unwrap_or(0).max(0);
    let origin = ((-lo) as usize + 3).next_multiple_of(2);
    (origin, (origin + hi as usize + 4).next_multiple_of(2))
}

/// The pointer argument for element `index` (even for packed types) of
/// `buf`.
pub(super) fn ptr_at<E: Elem>(buf: &mut Buf, index: usize) -> Vec<u8> {
    let base = u64::from_ne_bytes(buf.arg().try_into().unwrap());
    let byte = if E::DTYPE.is_packed() { index / 2 } else { index * E::DTYPE.scalar_bytes() };
    (base + byte as u64).to_ne_bytes().to_vec()
}

/// A 128-byte sizes or strides argument: the first entries, then garbage
/// the kernel must ignore.
pub(super) fn dims_arg<T: Copy + Into<i128>>(values: &[T]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(128);
    for k in 0..16 {
        let v = values.get(k).map_or(0x5EED_0000_0000_0BAD + k as i128, |&v| v.into());
        bytes.extend_from_slice(&(v as i64).to_ne_bytes());
    }
    bytes
}

/// Runs `name` (a strided copy or cast from `S` to `D`) on every case and
/// grid against `convert`, applied in logical order to a copy of the
/// destination buffer.
fn strided_cast<S: Elem, D: Elem>(name: &str, convert: fn(S) -> D, rng: &mut Rng) {
    for (c, case) in cases().iter().enumerate() {
        let (src_offsets, dst_offsets) = (offsets(&case.sizes, &case.src), offsets(&case.sizes, &case.dst));
        let (src_origin, src_len) = extent(&src_offsets);
        let (dst_origin, dst_len) = extent(&dst_offsets);
        let src: Vec<S> = (0..src_len).map(|_| rng.any()).collect();
        let before: Vec<D> = (0..dst_len).map(|_| rng.any()).collect();
        let mut want = before.clone();
        for (&s, &d) in src_offsets.iter().zip(&dst_offsets) {
            want[(dst_origin as i64 + d) as usize] = convert(src[(src_origin as i64 + s) as usize]);
        }
        for grid in GRIDS {
            let what = format!("{name} case {c} {:?} grid={grid:?}", case.sizes);
            let (mut sb, mut db) = (Buf::of(&src), Buf::of(&before));
            let args = [
                ptr_at::<S>(&mut sb, src_origin),
                ptr_at::<D>(&mut db, dst_origin),
                u64_arg(case.sizes.len() as u64),
                dims_arg(&case.sizes),
                dims_arg(&case.src),
                dims_arg(&case.dst),
            ];
            assert_eq!(launch(name, grid, &args), 0, "{what}");
            check(&what, &db.elems::<D>(dst_len), &want);
            check(&format!("{what} src"), &sb.elems::<S>(src_len), &src);
        }
    }
}

/// `copy_strided_<t>`: the bits, moved.
fn copy<E: Elem>(rng: &mut Rng) {
    strided_cast::<E, E>(&format!("copy_strided_{}", E::DTYPE.name()), |s| s, rng);
}

/// `cast_strided_<s>_<d>` and `cast_strided_trunc_<s>_<d>`.
fn cast<S: Elem, D: Elem>(rng: &mut Rng) {
    let (s, d) = (S::DTYPE.name(), D::DTYPE.name());
    strided_cast::<S, D>(&format!("cast_strided_{s}_{d}"), super::cast::reference::<S, D>, rng);
    strided_cast::<S, D>(&format!("cast_strided_trunc_{s}_{d}"), crate::dtype::tests_trunc::reference::<S, D>, rng);
}

#[test]
fn copy_strided_types() {
    let mut rng = Rng::new(11);
    copy::<f64>(&mut rng);
    copy::<f32>(&mut rng);
    copy::<f16>(&mut rng);
    copy::<bf16>(&mut rng);
    copy::<F8E4M3>(&mut rng);
    copy::<F4E2M1>(&mut rng);
    copy::<i64>(&mut rng);
    copy::<u8>(&mut rng);
    copy::<I4>(&mut rng);
    copy::<Bool>(&mut rng);
}

#[test]
fn cast_strided_pairs() {
    let mut rng = Rng::new(12);
    cast::<f32, bf16>(&mut rng);
    cast::<f32, i32>(&mut rng);
    cast::<bf16, i8>(&mut rng);
    cast::<f16, I4>(&mut rng);
    cast::<f32, F8E4M3>(&mut rng);
    cast::<f64, u8>(&mut rng);
    cast::<I4, f32>(&mut rng);
    cast::<F4E2M1, F8E5M2>(&mut rng);
    cast::<I4, F4E2M1>(&mut rng);
    cast::<Bool, I4>(&mut rng);
    cast::<u8, Bool>(&mut rng);
    cast::<i64, f16>(&mut rng);
    cast::<f32, f32>(&mut rng);
}

/// `fill_strided_<t>` on every case's destination layout.
fn fill<E: Elem>(rng: &mut Rng) {
    let name = format!("fill_strided_{}", E::DTYPE.name());
    for (c, case) in cases().iter().enumerate() {
        let dst_offsets = offsets(&case.sizes, &case.dst);
        let (origin, len) = extent(&dst_offsets);
        let before: Vec<E> = (0..len).map(|_| rng.any()).collect();
        let value: E = rng.any();
        let mut want = before.clone();
        for &d in &dst_offsets {
            want[(origin as i64 + d) as usize] = value.canonical();
        }
        for grid in GRIDS {
            let what = format!("{name} case {c} {:?} grid={grid:?}", case.sizes);
            let mut db = Buf::of(&before);
            let mut scalar = scalar_arg(value);
            if E::DTYPE.is_packed() {
                scalar[0] |= 0xA0;
            }
            let args = [
                ptr_at::<E>(&mut db, origin),
                u64_arg(case.sizes.len() as u64),
                dims_arg(&case.sizes),
                dims_arg(&case.dst),
                scalar,
            ];
            assert_eq!(launch(&name, grid, &args), 0, "{what}");
            check(&what, &db.elems::<E>(len), &want);
        }
    }
}

#[test]
fn fill_strided_types() {
    let mut rng = Rng::new(13);
    fill::<f64>(&mut rng);
    fill::<f32>(&mut rng);
    fill::<f16>(&mut rng);
    fill::<F8E5M2>(&mut rng);
    fill::<F4E2M1>(&mut rng);
    fill::<i16>(&mut rng);
    fill::<I4>(&mut rng);
    fill::<Bool>(&mut rng);
}

/// A destination whose elements are not provably distinct is written by
/// one block in logical order: the last write wins, on every grid.
#[test]
fn aliasing_destination_writes_in_order() {
    let src: Vec<i32> = (1..=6).collect();
    for grid in GRIDS {
        let (mut sb, mut db) = (Buf::of(&src), Buf::of(&[0i32; 4]));
        // sizes [2, 3], destination offsets 0 1 2 / 1 2 3.
        let args = [sb.arg(), db.arg(), u64_arg(2), dims_arg(&[2u64, 3]), dims_arg(&[3i64, 1]), dims_arg(&[1i64, 1])];
        assert_eq!(launch("copy_strided_i32", grid, &args), 0);
        assert_eq!(db.elems::<i32>(4), [1, 4, 5, 6], "grid {grid:?}");
        let mut fb = Buf::of(&[0u8; 8]);
        let args = [fb.arg(), u64_arg(2), dims_arg(&[2u64, 3]), dims_arg(&[1i64, 1]), vec![9]];
        assert_eq!(launch("fill_strided_u8", grid, &args), 0);
        assert_eq!(fb.elems::<u8>(8), [9, 9, 9, 9, 0, 0, 0, 0]);
    }
}

/// In place: the same elements as source and destination, types of one
/// width, any strides.
#[test]
fn in_place_same_layout() {
    let values: Vec<f32> = (0..35).map(|i| i as f32 * 1.5 - 20.0).collect();
    let (sizes, strides) = (dims_arg(&[5u64, 7]), dims_arg(&[1i64, 5]));
    for grid in GRIDS {
        let mut buf = Buf::of(&values);
        let args = [buf.arg(), buf.arg(), u64_arg(2), sizes.clone(), strides.clone(), strides.clone()];
        assert_eq!(launch("cast_strided_trunc_f32_i32", grid, &args), 0);
        let want: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        assert_eq!(buf.elems::<i32>(35), want);
        assert_eq!(launch("copy_strided_i32", grid, &args), 0);
        assert_eq!(buf.elems::<i32>(35), want);
        // Packed, in place: one block does it.
        let nibbles: Vec<I4> = (0..35).map(|i| I4((i % 16 - 8) as i8)).collect();
        let mut buf = Buf::of(&nibbles);
        let args = [buf.arg(), buf.arg(), u64_arg(2), sizes.clone(), strides.clone(), strides.clone()];
        assert_eq!(launch("cast_strided_i4_f4e2m1", grid, &args), 0);
        let want: Vec<F4E2M1> = nibbles.iter().map(|&v| super::cast::reference(v)).collect();
        check("i4 -> f4 in place", &buf.elems::<F4E2M1>(35), &want);
    }
}

const INVALID: i32 = xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE as i32;
const NULL: i32 = xdal_abi::xdal_status::XDAL_ERROR_NULL_POINTER as i32;

/// Launches `copy_strided_f32` (or `name`) with the given pieces.
fn strided_status(name: &str, src: &[u8], dst: &[u8], ndim: u64, sizes: &[u64], s: &[i64], d: &[i64]) -> i32 {
    let args = [src.to_vec(), dst.to_vec(), u64_arg(ndim), dims_arg(sizes), dims_arg(s), dims_arg(d)];
    launch(name, (3, 1, 1), &args)
}

#[test]
fn strided_errors() {
    let mut a = Buf::zeroed(4096);
    let mut b = Buf::zeroed(4096);
    let (pa, pb) = (a.arg(), b.arg());
    let null = ptr_arg(std::ptr::null_mut());
    let copy = "copy_strided_f32";
    let ok = |src: &[u8], dst: &[u8], sizes: &[u64], s: &[i64], d: &[i64]| {
        strided_status(copy, src, dst, sizes.len() as u64, sizes, s, d)
    };
    assert_eq!(ok(&pa, &pb, &[4, 4], &[4, 1], &[1, 4]), 0);
    // NULL arrays, unless there is nothing to touch.
    assert_eq!(ok(&null, &pb, &[4], &[1], &[1]), NULL);
    assert_eq!(ok(&pa, &null, &[4], &[1], &[1]), NULL);
    assert_eq!(ok(&null, &null, &[4, 0], &[1, 1], &[1, 1]), 0);
    assert_eq!(ok(&pa, &pb, &[1 << 40, 1 << 40, 0], &[1, 1, 1], &[0, 0, 0]), 0, "empty, however large");
    assert_eq!(ok(&pa, &null, &[], &[], &[]), NULL, "ndim 0 is one element");
    // More than 16 dimensions.
    assert_eq!(strided_status(copy, &pa, &pb, 17, &[1; 16], &[1; 16], &[1; 16]), INVALID);
    assert_eq!(strided_status(copy, &pa, &pb, u64::MAX, &[1; 16], &[1; 16], &[1; 16]), INVALID);
    assert_eq!(strided_status(copy, &pa, &pb, 16, &[1; 16], &[1; 16], &[1; 16]), 0);
    // Element counts and spans that overflow.
    assert_eq!(ok(&pa, &pb, &[1 << 40, 1 << 40], &[1, 1], &[1, 1]), INVALID);
    assert_eq!(ok(&pa, &pb, &[3], &[i64::MAX], &[1]), INVALID);
    assert_eq!(ok(&pa, &pb, &[3], &[1], &[i64::MIN]), INVALID);
    assert_eq!(ok(&pa, &pb, &[2, 2], &[1 << 62, 1], &[2, 1]), INVALID);
    // Offsets before address 0.
    assert_eq!(ok(&pa, &pb, &[2], &[-(1 << 60)], &[1]), INVALID);
    // A destination stride of 0 over more than one element: conflicting
    // writes. Over one element it is harmless.
    assert_eq!(ok(&pa, &pb, &[4, 3], &[3, 1], &[0, 1]), INVALID);
    assert_eq!(ok(&pa, &pb, &[1, 3], &[3, 1], &[0, 1]), 0);
    // Misaligned arrays.
    let misaligned = (u64::from_ne_bytes(pa.clone().try_into().unwrap()) + 2).to_ne_bytes().to_vec();
    assert_eq!(ok(&misaligned, &pb, &[4], &[1], &[1]), INVALID);
    assert_eq!(ok(&pa, &misaligned, &[4], &[2], &[2]), INVALID);
    // Overlaps other than the same elements.
    let a4 = ptr_at::<f32>(&mut a, 4);
    assert_eq!(ok(&pa, &a4, &[8], &[1], &[1]), INVALID, "shifted");
    assert_eq!(ok(&pa, &pa, &[4, 4], &[4, 1], &[1, 4]), INVALID, "transposed onto itself");
    assert_eq!(ok(&pa, &a4, &[4], &[2], &[2]), INVALID, "interleaved spans");
    assert_eq!(strided_status("cast_strided_f32_f64", &pa, &pa, 1, &[4], &[1], &[1]), INVALID, "widths differ");
    // In place where an element repeats in the destination: refused for a
    // conversion, harmless for a copy.
    assert_eq!(strided_status("cast_strided_f32_i32", &pa, &pa, 2, &[2, 2], &[1, 1], &[1, 1]), INVALID);
    assert_eq!(strided_status("copy_strided_f32", &pa, &pa, 2, &[2, 2], &[1, 1], &[1, 1]), 0);
    // Fill: the same rules for its one array.
    let fill = |dst: &[u8], ndim: u64, sizes: &[u64], d: &[i64]| {
        let args = [dst.to_vec(), u64_arg(ndim), dims_arg(sizes), dims_arg(d), 1.0f32.to_ne_bytes().to_vec()];
        launch("fill_strided_f32", (2, 1, 1), &args)
    };
    let b12 = ptr_at::<f32>(&mut b, 12);
    assert_eq!(fill(&b12, 2, &[3, 3], &[-3, -1]), 0);
    assert_eq!(b.elems::<f32>(16)[4..13], [1.0; 9]);
    assert_eq!(fill(&null, 1, &[3], &[1]), NULL);
    assert_eq!(fill(&null, 1, &[0], &[1]), 0);
    assert_eq!(fill(&pb, 17, &[3], &[1]), INVALID);
    assert_eq!(fill(&pb, 2, &[3, 2], &[1, 0]), INVALID);
    assert_eq!(fill(&misaligned, 1, &[3], &[1]), INVALID);
    assert_eq!(fill(&pb, 1, &[1 << 62], &[4]), INVALID);
}

/// Blocks writing neighbouring nibbles of one byte at the same time (a
/// transposed packed destination, rows split across blocks) lose none.
#[test]
fn packed_destination_shared_bytes() {
    let (rows, cols) = (64usize, 600usize);
    let src: Vec<crate::dtype::I4> = (0..rows * cols).map(|i| I4((i % 13) as i8 - 6)).collect();
    let mut sb = Buf::of(&src);
    let mut want = vec![I4(0); rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            want[j * rows + i] = src[i * cols + j];
        }
    }
    let sizes = dims_arg(&[rows as u64, cols as u64]);
    for round in 0..40 {
        let mut db = Buf::zeroed(rows * cols / 2);
        let args = [
            sb.arg(),
            db.arg(),
            u64_arg(2),
            sizes.clone(),
            dims_arg(&[cols as i64, 1]),
            dims_arg(&[1i64, rows as i64]),
        ];
        assert_eq!(launch("copy_strided_i4", (rows as u32, 1, 1), &args), 0);
        check(&format!("round {round}"), &db.elems::<I4>(rows * cols), &want);
    }
}
