//! `copy_strided_<t>`, `cast_strided_<s>_<d>`, `cast_strided_trunc_<s>_<d>`
//! and `fill_strided_<t>` on layouts that reach every path of the host's
//! plan: dense, transposed, broadcast and reversed sources, column-major
//! and reversed destinations (odd nibble strides for the packed types), no
//! dimension, sixteen, coinciding destination elements, empty views and
//! in-place casts.
use super::*;

/// A view: its sizes and the source's and destination's strides.
struct Shape {
    what: &'static str,
    sizes: Vec<u64>,
    src: Vec<i64>,
    dst: Vec<i64>,
}

fn shape(what: &'static str, sizes: &[u64], src: &[i64], dst: &[i64]) -> Shape {
    Shape { what, sizes: sizes.to_vec(), src: src.to_vec(), dst: dst.to_vec() }
}

/// Row-major strides, each dimension padded by `pad` elements.
fn row_major(sizes: &[u64], pad: i64) -> Vec<i64> {
    let mut strides = vec![0; sizes.len()];
    let mut step = 1i64;
    for k in (0..sizes.len()).rev() {
        strides[k] = step;
        step = step * sizes[k] as i64 + pad;
    }
    strides
}

/// Layouts every strided kernel runs on.
fn shapes() -> Vec<Shape> {
    let sixteen = [2, 1, 2, 1, 3, 1, 2, 1, 2, 1, 2, 1, 1, 2, 1, 2];
    let mut column_major = row_major(&sixteen.iter().rev().copied().collect::<Vec<_>>(), 0);
    column_major.reverse();
    vec![
        shape("dense", &[37], &[1], &[1]),
        shape("transposed", &[5, 7], &[1, 5], &[7, 1]),
        shape("reversed, even dst strides", &[4, 3], &[-3, 2], &[-6, -2]),
        shape("no dimension", &[], &[], &[]),
        shape("sixteen dimensions", &sixteen, &column_major, &row_major(&sixteen, 1)),
        shape("many work items", &[40, 50], &[1, 40], &[50, 1]),
        shape("empty", &[0, 5], &[1, 1], &[1, 1]),
    ]
}

/// Layouts that make the plan take one work item: a column-major
/// destination (odd nibble strides, one work item for packed types) and
/// coinciding destination elements (the last write wins). A kernel runs
/// with one work item as a separately compiled variant, so these go to a
/// subset of the kernels.
fn alone_shapes() -> Vec<Shape> {
    vec![
        shape("broadcast, reversed, column-major dst", &[3, 4, 5], &[0, -5, 1], &[1, 3, 12]),
        shape("coinciding dst", &[2, 3], &[3, 1], &[1, 1]),
    ]
}

/// The kernels that also run `alone_shapes`: every copy and fill, and the
/// casts to and from one type of each kind of storage.
fn runs_alone(s: Ty, d: Ty) -> bool {
    let sample = ["f32", "bf16", "f4e2m1", "i4", "bool", "i64"];
    s == d || (sample.contains(&s.name) && sample.contains(&d.name))
}

/// The arguments after the pointers: ndim and the three 128-byte arrays
/// (strides of fills: the destination's only).
fn shape_args(shape: &Shape, strides: &[&[i64]], rng: &mut Rng) -> Vec<Arg> {
    let mut args = vec![count(shape.sizes.len() as u64), bytes(&words(&shape.sizes, rng))];
    args.extend(strides.iter().map(|s| bytes(&words(s, rng))));
    args
}

/// A buffer holding a view of `t` with `strides`, and its pointer argument
/// (NULL for an empty view).
fn view(case: &mut Case, t: Ty, shape: &Shape, strides: &[i64], rng: &mut Rng) -> Arg {
    if shape.sizes.contains(&0) {
        return bytes(&NULL);
    }
    let (lo, hi) = reach(&shape.sizes, strides);
    let (len, offset) = layout(t, lo, hi);
    let mut buffer = rng.bytes(len);
    // Element values as the generators make them, guards kept random.
    let body = elements(t, (hi - lo + 1) as usize, rng, Mix::Any);
    buffer[GUARD..GUARD + body.len()].copy_from_slice(&body);
    case.buffers.push(buffer);
    Arg::Buffer(case.buffers.len() - 1, offset)
}

fn cast_case(s: Ty, d: Ty, shape: &Shape, rng: &mut Rng, in_place: bool) -> Case {
    let mut case = Case::default();
    let src = view(&mut case, s, shape, &shape.src, rng);
    let dst = if in_place { src.clone() } else { view(&mut case, d, shape, &shape.dst, rng) };
    let dst_strides = if in_place { &shape.src } else { &shape.dst };
    case.args = vec![src, dst];
    case.args.extend(shape_args(shape, &[&shape.src, dst_strides], rng));
    case
}

#[test]
fn strided_casts_and_copies() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(3);
    let (shapes, alone) = (shapes(), alone_shapes());
    let in_place =
        [shape("in place", &[6, 7], &[7, 1], &[7, 1]), shape("in place, reversed", &[4, 3], &[-6, -2], &[-6, -2])];
    for s in TYPES {
        for d in TYPES {
            let mut names = vec![
                format!("cast_strided_{}_{}", s.name, d.name),
                format!("cast_strided_trunc_{}_{}", s.name, d.name),
            ];
            if s == d {
                names.push(format!("copy_strided_{}", s.name));
            }
            let extra = if runs_alone(s, d) { &alone[..] } else { &[] };
            for name in &names {
                for shape in shapes.iter().chain(extra) {
                    report.check(b, name, shape.what, &cast_case(s, d, shape, &mut rng, false));
                }
                for shape in &in_place {
                    // Accepted with equal widths, refused otherwise.
                    report.check(b, name, shape.what, &cast_case(s, d, shape, &mut rng, true));
                }
            }
        }
    }
    report.finish("strided_casts_and_copies");
}

#[test]
fn strided_fills() {
    let Some(b) = backends() else { return };
    let mut report = Report::default();
    let mut rng = Rng::new(4);
    for t in TYPES {
        let name = format!("fill_strided_{}", t.name);
        for shape in shapes().iter().chain(&alone_shapes()) {
            let mut case = Case::default();
            let dst = view(&mut case, t, shape, &shape.dst, &mut rng);
            case.args = vec![dst];
            case.args.extend(shape_args(shape, &[&shape.dst], &mut rng));
            case.args.push(bytes(&scalar(t, &mut rng, Mix::Any)));
            report.check(b, &name, shape.what, &case);
        }
    }
    report.finish("strided_fills");
}
