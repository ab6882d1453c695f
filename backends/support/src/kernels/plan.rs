//! The host half of each built-in: the fake kernel's refusals, checked on
//! the argument values, and the number of work items to enqueue.
//!
//! Kernels split their work into one contiguous run per work item (of the
//! logical order, for the strided ones), so the number of work items is
//! free: it is one of two sizes, `FEW` or `MANY`, whatever the count, because
//! runtimes compile a kernel for each work-group size they run it with
//! (PoCL derives the group size from the global size and compiles a
//! specialised kernel for each, at tens to hundreds of milliseconds
//! apiece). `sum_<t>` takes one work item, since the fake's summation order
//! is sequential; so do strided kernels whose destination elements may
//! coincide (the last write must win) or whose packed elements could share
//! a byte across runs.
use super::check::Span;
use super::dtype::DType;
use super::{ArgValues, Kind, Plan};
use crate::strided::Walk;

/// Work items for up to `MANY` units of work.
const FEW: usize = 1 << 10;
/// Work items for more.
const MANY: usize = 1 << 16;

/// Work items for `units` independent units of work.
fn spread(units: usize) -> Plan {
    Plan {
        work_items: match units {
            0 => 0,
            1..=MANY => FEW,
            _ => MANY,
        },
        units,
    }
}

/// One work item, doing everything in order.
const ALONE: Plan = Plan { work_items: 1, units: 1 };

/// Nothing to enqueue.
const NOTHING: Plan = Plan { work_items: 0, units: 0 };

/// Checks the arguments of `kind` over `s` (and `d` for casts).
pub(super) fn plan(kind: Kind, s: DType, d: DType, args: &ArgValues) -> Result<Plan, String> {
    match kind {
        Kind::Fill => Span::new("dst", args.u64(0), args.u64(1), s).map(|_| spread(s.units(args.u64(1) as usize))),
        Kind::Add | Kind::Mul | Kind::Axpby => binary(s, args),
        Kind::Sum => {
            Span::new("x", args.u64(0), args.u64(2), s)?;
            Span::new("out", args.u64(1), 1, s)?;
            Ok(ALONE)
        }
        Kind::Matmul => matmul(s, args),
        Kind::SumDim => sum_dim(s, args),
        Kind::Cast | Kind::CastTrunc => cast(s, d, args),
        Kind::CopyStrided => cast_strided(s, s, args),
        Kind::CastStrided | Kind::CastStridedTrunc => cast_strided(s, d, args),
        Kind::FillStrided => fill_strided(s, args),
    }
}

/// `add`, `mul`, `axpby`: `out` may be `a` and/or `b`, nothing else of
/// them.
fn binary(t: DType, args: &ArgValues) -> Result<Plan, String> {
    let n = args.u64(3);
    let (a, b, out) =
        (Span::new("a", args.u64(0), n, t)?, Span::new("b", args.u64(1), n, t)?, Span::new("out", args.u64(2), n, t)?);
    for (input, what) in [(a, "a"), (b, "b")] {
        if out.overlaps(&input) && out.base != input.base {
            return Err(format!("out overlaps {what} without being {what}"));
        }
    }
    Ok(spread(t.units(n as usize)))
}

/// `cast`, `cast_trunc`: `dst` may be `src` itself with equal widths.
fn cast(s: DType, d: DType, args: &ArgValues) -> Result<Plan, String> {
    let n = args.u64(2);
    let (src, dst) = (Span::new("src", args.u64(0), n, s)?, Span::new("dst", args.u64(1), n, d)?);
    let in_place = src.base == dst.base && s.bits == d.bits;
    if dst.overlaps(&src) && !in_place {
        return Err("dst overlaps src without being it, with the same element width".into());
    }
    if in_place && s == d {
        return Ok(NOTHING);
    }
    Ok(spread(d.units(n as usize)))
}

fn matmul(t: DType, args: &ArgValues) -> Result<Plan, String> {
    let (m, n, k) = (args.u64(3), args.u64(4), args.u64(5));
    let elements = |x: u64, y: u64, what: &str| x.checked_mul(y).ok_or_else(|| format!("the size of {what} overflows"));
    let a = Span::new("a", args.u64(0), elements(m, k, "a")?, t)?;
    let b = Span::new("b", args.u64(1), elements(k, n, "b")?, t)?;
    let c = Span::new("c", args.u64(2), elements(m, n, "c")?, t)?;
    if c.overlaps(&a) || c.overlaps(&b) {
        return Err("c overlaps a or b".into());
    }
    Ok(spread(t.units((m * n) as usize)))
}

fn sum_dim(t: DType, args: &ArgValues) -> Result<Plan, String> {
    let (outer, reduce, inner) = (args.u64(2), args.u64(3), args.u64(4));
    let overflow = || format!("outer {outer} x reduce {reduce} x inner {inner} overflows");
    let elements = outer.checked_mul(reduce).and_then(|e| e.checked_mul(inner)).ok_or_else(overflow)?;
    let outputs = outer.checked_mul(inner).ok_or_else(overflow)?;
    let (x, out) = (Span::new("x", args.u64(0), elements, t)?, Span::new("out", args.u64(1), outputs, t)?);
    if out.overlaps(&x) {
        return Err("out overlaps x".into());
    }
    Ok(spread(t.units(outputs as usize)))
}

/// The strided casts and copies: `(src, dst, ndim, sizes, src_strides,
/// dst_strides)`.
fn cast_strided(s: DType, d: DType, args: &ArgValues) -> Result<Plan, String> {
    let (src, dst) = (args.u64(0), args.u64(1));
    let (src_strides, dst_strides) = (args.strides(4), args.strides(5));
    let walk = Walk::new(args.u64(2), &args.sizes(3), [&src_strides, &dst_strides])?;
    if walk.count() == 0 {
        // Nothing is touched; the pointers are checked as a dense kernel's.
        Span::new("src", src, 0, s)?;
        Span::new("dst", dst, 0, d)?;
        return Ok(NOTHING);
    }
    if walk.broadcasts(1) {
        return Err("a dst stride is 0 along a dimension of size 2 or more".into());
    }
    let ((src_lo, src_hi), (dst_lo, dst_hi)) = (walk.span(0)?, walk.span(1)?);
    let src_span = Span::spanning("src", src, src_lo, src_hi, s)?;
    let dst_span = Span::spanning("dst", dst, dst_lo, dst_hi, d)?;
    let one_to_one = walk.is_one_to_one(1);
    let in_place = src == dst && s.bits == d.bits && walk.same_offsets(0, 1);
    if dst_span.overlaps(&src_span) && !in_place {
        return Err("dst overlaps src without being the same elements".into());
    }
    if in_place && s == d {
        return Ok(NOTHING);
    }
    if in_place && !one_to_one {
        return Err("in place, with dst elements that may coincide".into());
    }
    Ok(strided_plan(&walk, 1, d, one_to_one))
}

/// `fill_strided`: `(dst, ndim, sizes, dst_strides, value)`.
fn fill_strided(t: DType, args: &ArgValues) -> Result<Plan, String> {
    let dst = args.u64(0);
    let strides = args.strides(3);
    let walk = Walk::new(args.u64(1), &args.sizes(2), [&strides])?;
    if walk.count() == 0 {
        Span::new("dst", dst, 0, t)?;
        return Ok(NOTHING);
    }
    if walk.broadcasts(0) {
        return Err("a dst stride is 0 along a dimension of size 2 or more".into());
    }
    let (lo, hi) = walk.span(0)?;
    Span::spanning("dst", dst, lo, hi, t)?;
    Ok(strided_plan(&walk, 0, t, walk.is_one_to_one(0)))
}

/// Runs of the logical order per work item, unless the destination side
/// `dst` needs one work item: its elements may coincide, or it is packed
/// with odd strides and not contiguous, so that elements of two runs could
/// share a byte (runs have even lengths, which keeps a contiguous
/// destination's bytes apart).
fn strided_plan<const SIDES: usize>(walk: &Walk<SIDES>, dst: usize, t: DType, one_to_one: bool) -> Plan {
    let shares_bytes = t.is_packed() && !walk.is_row_major(dst) && !walk.all_even(dst);
    if !one_to_one || shares_bytes {
        ALONE
    } else {
        spread(walk.count())
    }
}
