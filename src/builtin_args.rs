//! Which bytes a built-in kernel's pointer arguments reach, from the
//! signatures ABI.md and docs/kernels.md fix for every backend: the front
//! checks each against the live allocations of the launch's device before
//! the backend sees the launch, so a built-in never writes past its
//! allocation, into freed memory or into host memory, on any backend.
//! (Kernels of loaded modules take arguments xdal cannot interpret; they
//! are the caller's to get right, as on CUDA.)
use crate::error::{bail, err, XResult};
use xdal_abi::xdal_kernel_arg_t;
use xdal_backend_support::strided::{Walk, DIMS_BYTES, MAX_DIMS};

/// The argument layouts of the built-in families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// `fill_<t>(T *dst, n, T value)`
    Fill,
    /// `add_<t>`, `mul_<t>`: `(const T *a, const T *b, T *out, n)`
    Binary,
    /// `sum_<t>(const T *x, T *out, n)`
    Sum,
    /// `matmul_<t>(const T *a, const T *b, T *c, m, n, k)`
    Matmul,
    /// `cast_<s>_<d>`, `cast_trunc_<s>_<d>`: `(const S *src, D *dst, n)`
    Cast,
    /// `copy_strided_<t>`, `cast_strided[_trunc]_<s>_<d>`:
    /// `(const S *src, D *dst, ndim, sizes[16], src_strides[16], dst_strides[16])`
    Strided,
    /// `fill_strided_<t>(T *dst, ndim, sizes[16], dst_strides[16], T value)`
    FillStrided,
    /// `axpby_<t>(const T *a, const T *b, T *out, n, T alpha, T beta)`
    Axpby,
    /// `sum_dim_<t>(const T *x, T *out, outer, reduce, inner)`
    SumDim,
}

/// Name prefixes, longest first where one starts another; the rest of the
/// name is one type, or for a cast `<s>_<d>`.
const PREFIXES: [(&str, Family, bool); 13] = [
    ("cast_strided_trunc_", Family::Strided, true),
    ("cast_strided_", Family::Strided, true),
    ("cast_trunc_", Family::Cast, true),
    ("cast_", Family::Cast, true),
    ("copy_strided_", Family::Strided, false),
    ("fill_strided_", Family::FillStrided, false),
    ("fill_", Family::Fill, false),
    ("add_", Family::Binary, false),
    ("mul_", Family::Binary, false),
    ("sum_dim_", Family::SumDim, false),
    ("sum_", Family::Sum, false),
    ("matmul_", Family::Matmul, false),
    ("axpby_", Family::Axpby, false),
];

/// The bits per element of each type name of docs/kernels.md.
fn type_bits(name: &str) -> Option<u32> {
    Some(match name {
        "f64" | "i64" => 64,
        "f32" | "i32" => 32,
        "f16" | "bf16" | "i16" => 16,
        "f8e4m3" | "f8e5m2" | "i8" | "u8" | "bool" => 8,
        "f4e2m1" | "i4" => 4,
        _ => return None,
    })
}

/// A built-in kernel's signature: what its pointer arguments reach.
#[derive(Clone, Debug)]
pub(crate) struct BuiltinArgs {
    name: String,
    family: Family,
    /// Bits per element of the source (or only) type and of the
    /// destination type.
    bits: (u32, u32),
}

/// One pointer argument and the bytes from it that a launch touches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reach {
    /// Its index in the argument list.
    pub index: usize,
    /// Its name in docs/kernels.md.
    pub role: &'static str,
    /// The lowest address touched.
    pub addr: usize,
    /// Bytes from `addr` (0: nothing is touched, nothing to check).
    pub bytes: usize,
}

impl BuiltinArgs {
    /// The signature of the built-in called `name`, None for a name that
    /// is not one (the backend then answers `module_get_function`).
    pub fn of(name: &str) -> Option<BuiltinArgs> {
        let (prefix, family, is_cast) = PREFIXES.iter().find(|(prefix, ..)| name.starts_with(prefix))?;
        let types = &name[prefix.len()..];
        let bits = if *is_cast {
            let (s, d) = types.split_once('_')?;
            (type_bits(s)?, type_bits(d)?)
        } else {
            let t = type_bits(types)?;
            (t, t)
        };
        Some(BuiltinArgs { name: name.to_string(), family: *family, bits })
    }

    /// The pointer arguments of a launch with `args` and the bytes each
    /// reaches. A count or size of arguments the kernel does not take, or
    /// counts whose bytes do not fit the address space, are
    /// `XDAL_ERROR_INVALID_VALUE` (checked here rather than left to the
    /// backend, so that a captured launch is refused at capture time).
    pub fn reaches(&self, args: &[xdal_kernel_arg_t]) -> XResult<Reaches> {
        let scalar = self.bits.1.div_ceil(8) as usize;
        let Some(values) = ArgReader::new(self.family, scalar, args) else {
            let layout = ArgReader::layout(self.family, scalar);
            let expected = &*layout;
            let given: Vec<usize> = args.iter().map(|a| a.size).collect();
            bail!(
                XDAL_ERROR_INVALID_VALUE,
                "{} takes {} argument(s) of {expected:?} bytes; the launch gave {} of {given:?}",
                self.name,
                expected.len(),
                given.len()
            );
        };
        let (s, d) = self.bits;
        let array = |index, role, elements: Option<u64>, bits| -> XResult<Reach> {
            let elements = elements.ok_or_else(|| self.too_large())?;
            let bytes = bytes_for(elements, bits).ok_or_else(|| self.too_large())?;
            Ok(Reach { index, role, addr: values.pointer(index), bytes })
        };
        let n = |index| Some(values.word(index));
        Ok(match self.family {
            Family::Fill => Reaches::of([array(0, "dst", n(1), d)?]),
            Family::Binary | Family::Axpby => {
                Reaches::of([array(0, "a", n(3), s)?, array(1, "b", n(3), s)?, array(2, "out", n(3), d)?])
            }
            Family::Sum => Reaches::of([array(0, "x", n(2), s)?, array(1, "out", Some(1), d)?]),
            Family::Matmul => {
                let (m, n, k) = (values.word(3), values.word(4), values.word(5));
                Reaches::of([
                    array(0, "a", m.checked_mul(k), s)?,
                    array(1, "b", k.checked_mul(n), s)?,
                    array(2, "c", m.checked_mul(n), d)?,
                ])
            }
            Family::Cast => Reaches::of([array(0, "src", n(2), s)?, array(1, "dst", n(2), d)?]),
            Family::SumDim => {
                let (outer, reduce, inner) = (values.word(2), values.word(3), values.word(4));
                let x = outer.checked_mul(reduce).and_then(|c| c.checked_mul(inner));
                Reaches::of([array(0, "x", x, s)?, array(1, "out", outer.checked_mul(inner), d)?])
            }
            Family::Strided => {
                let walk = Walk::<2>::new(values.word(2), &values.dims(3), [&values.strides(4), &values.strides(5)])
                    .map_err(|why| self.refused(&why))?;
                Reaches::of([
                    self.strided(&values, 0, "src", &walk, 0, s)?,
                    self.strided(&values, 1, "dst", &walk, 1, d)?,
                ])
            }
            Family::FillStrided => {
                let walk = Walk::<1>::new(values.word(1), &values.dims(2), [&values.strides(3)])
                    .map_err(|why| self.refused(&why))?;
                Reaches::of([self.strided(&values, 0, "dst", &walk, 0, d)?])
            }
        })
    }

    /// The reach of side `side` of a strided walk from argument `index`:
    /// from the byte holding its lowest element to the one holding its
    /// highest.
    fn strided<const SIDES: usize>(
        &self,
        values: &ArgReader,
        index: usize,
        role: &'static str,
        walk: &Walk<SIDES>,
        side: usize,
        bits: u32,
    ) -> XResult<Reach> {
        let base = values.word(index);
        if walk.count() == 0 {
            return Ok(Reach { index, role, addr: values.pointer(index), bytes: 0 });
        }
        let (lo, hi) = walk.span(side).map_err(|why| self.refused(&why))?;
        let bits = i128::from(bits);
        let first = (lo * bits).div_euclid(8);
        let end = ((hi + 1) * bits + 7).div_euclid(8);
        let addr = i128::from(base) + first;
        let bytes = end - first;
        match (usize::try_from(addr), usize::try_from(bytes)) {
            (Ok(addr), Ok(bytes)) if addr.checked_add(bytes).is_some() => Ok(Reach { index, role, addr, bytes }),
            _ => Err(err!(
                XDAL_ERROR_INVALID_VALUE,
                "{}: {role} ({base:#x}) with offsets {lo}..={hi} leaves the address space",
                self.name
            )),
        }
    }

    fn too_large(&self) -> crate::error::Error {
        err!(XDAL_ERROR_INVALID_VALUE, "{}: the element counts overflow the address space", self.name)
    }

    fn refused(&self, why: &str) -> crate::error::Error {
        err!(XDAL_ERROR_INVALID_VALUE, "{}: {why}", self.name)
    }
}

/// Bytes of `elements` elements of `bits` bits (packed types: whole bytes).
fn bytes_for(elements: u64, bits: u32) -> Option<usize> {
    let bytes = elements.checked_mul(u64::from(bits))?.div_ceil(8);
    usize::try_from(bytes).ok()
}

/// The argument sizes of a family: at most six.
type Layout = InPlace<usize, 6>;

/// The launch's argument values, once their sizes are the family's.
struct ArgReader<'a> {
    args: &'a [xdal_kernel_arg_t],
}

impl<'a> ArgReader<'a> {
    /// The exact argument sizes of `family`, whose scalars take `scalar`
    /// bytes (a 4-bit type's take one). In place, not in a Vec: every
    /// launch of a built-in asks.
    fn layout(family: Family, scalar: usize) -> Layout {
        const W: usize = 8;
        const D: usize = DIMS_BYTES;
        match family {
            Family::Fill => Layout::of([W, W, scalar]),
            Family::Binary => Layout::of([W, W, W, W]),
            Family::Sum | Family::Cast => Layout::of([W, W, W]),
            Family::Matmul => Layout::of([W, W, W, W, W, W]),
            Family::Strided => Layout::of([W, W, W, D, D, D]),
            Family::FillStrided => Layout::of([W, W, D, D, scalar]),
            Family::Axpby => Layout::of([W, W, W, W, scalar, scalar]),
            Family::SumDim => Layout::of([W, W, W, W, W]),
        }
    }

    /// None when the count or a size of the arguments is not the family's.
    fn new(family: Family, scalar: usize, args: &'a [xdal_kernel_arg_t]) -> Option<ArgReader<'a>> {
        let layout = Self::layout(family, scalar);
        let fits = args.len() == layout.len() && args.iter().zip(layout.iter()).all(|(a, &size)| a.size == size);
        fits.then_some(ArgReader { args })
    }

    /// Argument `i`, an 8-byte pointer or count.
    fn word(&self, i: usize) -> u64 {
        let mut bytes = [0u8; 8];
        // SAFETY: the front checked `value` non-NULL; `new` checked the size.
        unsafe { std::ptr::copy_nonoverlapping(self.args[i].value as *const u8, bytes.as_mut_ptr(), 8) };
        u64::from_ne_bytes(bytes)
    }

    /// Argument `i`, an 8-byte pointer (one no allocation can hold where
    /// it does not fit a `usize`).
    fn pointer(&self, i: usize) -> usize {
        usize::try_from(self.word(i)).unwrap_or(usize::MAX)
    }

    /// Argument `i`, a `uint64_t sizes[16]`.
    fn dims(&self, i: usize) -> [u64; MAX_DIMS] {
        let mut words = [0u64; MAX_DIMS];
        // SAFETY: the front checked `value` non-NULL; `new` checked the
        // size, DIMS_BYTES = size_of_val(&words).
        unsafe {
            std::ptr::copy_nonoverlapping(self.args[i].value as *const u8, words.as_mut_ptr() as *mut u8, DIMS_BYTES)
        };
        words
    }

    /// Argument `i`, an `int64_t strides[16]`.
    fn strides(&self, i: usize) -> [i64; MAX_DIMS] {
        self.dims(i).map(|word| word as i64)
    }
}

/// The memory ranges of one launch's pointer arguments: a built-in has at
/// most three.
pub(crate) type Reaches = InPlace<Reach, 3>;

/// Up to `CAP` values held in place, not on the heap: every launch of a
/// built-in builds its argument layout and reaches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InPlace<T, const CAP: usize> {
    items: [T; CAP],
    len: usize,
}

impl<T: Copy + Default, const CAP: usize> InPlace<T, CAP> {
    fn of<const N: usize>(list: [T; N]) -> Self {
        const { assert!(N <= CAP, "more values than the room in place") };
        let mut items = [T::default(); CAP];
        items[..N].copy_from_slice(&list);
        InPlace { items, len: N }
    }
}

impl<T, const CAP: usize> std::ops::Deref for InPlace<T, CAP> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items[..self.len]
    }
}

impl<T, const CAP: usize> IntoIterator for InPlace<T, CAP> {
    type Item = T;
    type IntoIter = std::iter::Take<std::array::IntoIter<T, CAP>>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len)
    }
}

/// How a refusal names a pointer argument: "add_f32's argument 2 (out)".
struct ArgumentName<'a> {
    kernel: &'a str,
    reach: &'a Reach,
}

impl std::fmt::Display for ArgumentName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}'s argument {} ({})", self.kernel, self.reach.index, self.reach.role)
    }
}

/// Refuses a launch of `builtin` whose pointer arguments (`reaches`, from
/// `BuiltinArgs::reaches`) reach memory other than live allocations of
/// `device`. `classify` is the copies' check of a range (it refuses a
/// range that runs past its allocation or lies in freed device memory).
pub(crate) fn check_reaches(
    builtin: &BuiltinArgs,
    reaches: &[Reach],
    device: std::ffi::c_int,
    classify: impl Fn(usize, usize, &dyn std::fmt::Display) -> XResult<crate::registry::MemoryType>,
) -> XResult<()> {
    use crate::registry::MemoryType;
    for reach in reaches {
        if reach.bytes == 0 {
            continue;
        }
        // Formatted only into a refusal: every launch of a built-in
        // passes here.
        let what = ArgumentName { kernel: &builtin.name, reach };
        if reach.addr == 0 {
            bail!(
                XDAL_ERROR_INVALID_POINTER,
                "{what} is NULL, and the kernel would touch {} bytes from it",
                reach.bytes
            );
        }
        let memory = classify(reach.addr, reach.bytes, &what)?;
        match memory {
            MemoryType::Device(d) if d == device => {}
            MemoryType::Device(d) => bail!(
                XDAL_ERROR_INVALID_POINTER,
                "{what}, {:#x}, is memory of device {d}, but the launch runs on device {device}",
                reach.addr
            ),
            MemoryType::Host => bail!(
                XDAL_ERROR_INVALID_POINTER,
                "{what}, {:#x}, is pinned host memory: built-in kernels take memory of the launch's device ({device})",
                reach.addr
            ),
            MemoryType::Unregistered => bail!(
                XDAL_ERROR_INVALID_POINTER,
                "{what}, {:#x}, is not in any live allocation of device {device} (host memory, or an address xdal \
                 never gave)",
                reach.addr
            ),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;

    fn arg<T>(value: &T) -> xdal_kernel_arg_t {
        xdal_kernel_arg_t { value: value as *const T as *const c_void, size: std::mem::size_of::<T>() }
    }

    #[test]
    fn names_parse_into_families_and_types() {
        assert_eq!(BuiltinArgs::of("fill_f32").map(|b| (b.family, b.bits)), Some((Family::Fill, (32, 32))));
        assert_eq!(BuiltinArgs::of("fill_strided_i4").map(|b| (b.family, b.bits)), Some((Family::FillStrided, (4, 4))));
        assert_eq!(BuiltinArgs::of("cast_f32_bf16").map(|b| (b.family, b.bits)), Some((Family::Cast, (32, 16))));
        assert_eq!(BuiltinArgs::of("cast_trunc_f64_i8").map(|b| b.family), Some(Family::Cast));
        assert_eq!(
            BuiltinArgs::of("cast_strided_trunc_f8e4m3_f4e2m1").map(|b| (b.family, b.bits)),
            Some((Family::Strided, (8, 4)))
        );
        assert_eq!(BuiltinArgs::of("sum_dim_bool").map(|b| b.family), Some(Family::SumDim));
        assert_eq!(BuiltinArgs::of("sum_u8").map(|b| b.family), Some(Family::Sum));
        for not_builtin in ["fill_f33", "fill_", "cast_f32", "cast_f32_", "gelu_f32", "add_f32_f32", ""] {
            assert!(BuiltinArgs::of(not_builtin).is_none(), "{not_builtin}");
        }
    }

    #[test]
    fn reaches_follow_the_counts_and_the_types() {
        let (p, q, r) = (0x1000u64, 0x2000u64, 0x3000u64);
        let n = 10u64;
        let value = 0u8;
        let fill = BuiltinArgs::of("fill_i4").unwrap();
        let reach = fill.reaches(&[arg(&p), arg(&n), arg(&value)]).unwrap();
        assert_eq!(*reach, [Reach { index: 0, role: "dst", addr: 0x1000, bytes: 5 }], "ten nibbles in five bytes");
        let cast = BuiltinArgs::of("cast_f64_f16").unwrap();
        let reach = cast.reaches(&[arg(&p), arg(&q), arg(&n)]).unwrap();
        assert_eq!((reach[0].bytes, reach[1].bytes), (80, 20));
        let (m, k) = (3u64, 4u64);
        let matmul = BuiltinArgs::of("matmul_f32").unwrap();
        let reach = matmul.reaches(&[arg(&p), arg(&q), arg(&r), arg(&m), arg(&n), arg(&k)]).unwrap();
        assert_eq!(reach.iter().map(|r| r.bytes).collect::<Vec<_>>(), [48, 160, 120]);
        let sum = BuiltinArgs::of("sum_f16").unwrap();
        let zero = 0u64;
        let reach = sum.reaches(&[arg(&p), arg(&q), arg(&zero)]).unwrap();
        assert_eq!((reach[0].bytes, reach[1].bytes), (0, 2), "an empty sum still writes its result");
        let huge = u64::MAX / 2;
        let err = fill.reaches(&[arg(&p), arg(&huge), arg(&value)]).map(|_| ()).unwrap_err();
        assert_eq!(err.status, xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE);
        // Sizes the kernel does not take are refused.
        for bad in [&[arg(&p), arg(&1u32), arg(&value)][..], &[arg(&p), arg(&n)], &[arg(&p), arg(&n), arg(&1u16)]] {
            let err = fill.reaches(bad).map(|_| ()).unwrap_err();
            assert_eq!(err.status, xdal_abi::xdal_status::XDAL_ERROR_INVALID_VALUE);
            assert!(err.message.contains("fill_i4 takes 3 argument(s) of [8, 8, 1] bytes"), "{}", err.message);
        }
    }

    #[test]
    fn strided_reaches_cover_negative_strides_and_packed_elements() {
        let (src, dst) = (0x10_000u64, 0x20_000u64);
        let ndim = 2u64;
        let mut sizes = [0u64; MAX_DIMS];
        sizes[..2].copy_from_slice(&[3, 4]);
        let mut src_strides = [0i64; MAX_DIMS];
        src_strides[..2].copy_from_slice(&[-4, 1]); // rows backwards from src
        let mut dst_strides = [0i64; MAX_DIMS];
        dst_strides[..2].copy_from_slice(&[8, 2]); // every other nibble
        let copy = BuiltinArgs::of("copy_strided_i4").unwrap();
        let reach = copy
            .reaches(&[arg(&src), arg(&dst), arg(&ndim), arg(&sizes), arg(&src_strides), arg(&dst_strides)])
            .unwrap();
        // src offsets -8..=3 (nibbles): bytes -4..2; dst offsets 0..=22: bytes 0..12.
        assert_eq!(reach[0], Reach { index: 0, role: "src", addr: 0x10_000 - 4, bytes: 6 });
        assert_eq!(reach[1], Reach { index: 1, role: "dst", addr: 0x20_000, bytes: 12 });
        sizes[1] = 0;
        let reach = copy
            .reaches(&[arg(&src), arg(&dst), arg(&ndim), arg(&sizes), arg(&src_strides), arg(&dst_strides)])
            .unwrap();
        assert_eq!((reach[0].bytes, reach[1].bytes), (0, 0), "an empty view touches nothing");
    }
}
