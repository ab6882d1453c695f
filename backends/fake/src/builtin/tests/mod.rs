//! Tests of the built-in kernels, called through their `extern "C"`
//! signature with hand-built contexts on several grid shapes (blocks run on
//! three threads), on `Vec`-backed buffers, against references computed
//! here independently (through `f64` or `i64` and the `dtype` codecs).
mod axpby;
mod bench;
mod cast;
mod elementwise;
mod errors;
mod matmul;
mod strided;
mod sum;
mod sum_dim;
mod trunc;

use super::find;
use crate::dtype::{for_each_elem, Class, Elem};
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering::Relaxed};
use xdal_abi::{xdal_dim3_t, xdal_kernel_context_t};

/// Grid shapes every kernel is run on: one block, seven, a 2x3 grid, and
/// more blocks than elements.
pub(super) const GRIDS: [(u32, u32, u32); 4] = [(1, 1, 1), (7, 1, 1), (2, 3, 1), (300, 1, 1)];

/// A test run once for each (source, destination) pair of element types.
pub(super) trait PairTest {
    fn pair<S: Elem, D: Elem>(rng: &mut Rng);
}

/// Runs `T::pair` for all 196 pairs of element types.
pub(super) fn every_pair<T: PairTest>(rng: &mut Rng) {
    fn from<T: PairTest, S: Elem>(rng: &mut Rng) {
        macro_rules! to {
            ($d:ty) => {
                T::pair::<S, $d>(rng)
            };
        }
        for_each_elem!(to);
    }
    macro_rules! run {
        ($s:ty) => {
            from::<T, $s>(rng)
        };
    }
    for_each_elem!(run);
}

/// A small deterministic random source (64-bit LCG, high bits out).
pub(super) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let x = self.0;
        x ^ (x >> 29) ^ (x << 17)
    }
    /// Any encoding of `E`, NaNs and infinities included.
    pub fn any<E: Elem>(&mut self) -> E {
        E::from_bits(self.next())
    }
    /// A value whose sums and products stay exact in `f32`: for floats a
    /// multiple of 1/4 of magnitude at most 16 (rounded into the type);
    /// integers and bools anything (they wrap, and any nonzero byte is a
    /// true bool).
    pub fn nice<E: Elem>(&mut self) -> E {
        match E::DTYPE.class() {
            Class::Float => E::from_f64((self.next() % 129) as f64 / 4.0 - 16.0),
            _ => self.any(),
        }
    }
}

/// The context of block `index` of `grid`.
pub(super) fn context(grid: (u32, u32, u32), index: u32) -> xdal_kernel_context_t {
    let (gx, gy, _) = grid;
    xdal_kernel_context_t {
        struct_size: std::mem::size_of::<xdal_kernel_context_t>(),
        grid_dim: xdal_dim3_t { x: grid.0, y: grid.1, z: grid.2 },
        block_dim: xdal_dim3_t { x: 32, y: 1, z: 1 },
        block_idx: xdal_dim3_t { x: index % gx, y: index / gx % gy, z: index / (gx * gy) },
        shared_mem: std::ptr::null_mut(),
        shared_mem_bytes: 0,
    }
}

/// The argument pointer array, shared by the threads that run blocks.
struct ArgPointers(Vec<*mut c_void>);
// SAFETY: the kernels only read the argument bytes, which outlive the scope.
unsafe impl Sync for ArgPointers {}

impl ArgPointers {
    /// The array (a method, so closures capture the whole `Sync` wrapper).
    fn as_ptr(&self) -> *const *mut c_void {
        self.0.as_ptr()
    }
}

/// Runs every block of `grid` of kernel `name` on three threads; returns
/// the first failure status seen, or 0.
pub(super) fn launch(name: &str, grid: (u32, u32, u32), args: &[Vec<u8>]) -> i32 {
    let builtin = find(name).unwrap_or_else(|| panic!("no kernel {name}"));
    let sizes: Vec<usize> = args.iter().map(Vec::len).collect();
    assert_eq!(sizes, builtin.arg_sizes, "{name}");
    let mut copies = args.to_vec();
    let pointers = ArgPointers(copies.iter_mut().map(|a| a.as_mut_ptr().cast::<c_void>()).collect());
    let count = grid.0 * grid.1 * grid.2;
    let (next, failed) = (AtomicU32::new(0), AtomicI32::new(0));
    std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Relaxed);
                if index >= count {
                    break;
                }
                let ctx = context(grid, index);
                // SAFETY: a valid context, and one pointer per argument to
                // bytes of the size the kernel expects.
                let status = unsafe { (builtin.kernel)(&ctx, pointers.as_ptr()) };
                if status != 0 {
                    failed.store(status, Relaxed);
                }
            });
        }
    });
    failed.into_inner()
}

/// An 8-aligned, zeroed byte buffer for array arguments.
pub(super) struct Buf {
    words: Vec<u64>,
    len: usize,
}

impl Buf {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Buf {
        Buf { words: vec![0; len.div_ceil(8).max(1)], len }
    }
    /// `len` bytes of `byte`.
    pub fn filled(len: usize, byte: u8) -> Buf {
        let mut buf = Buf::zeroed(len);
        buf.bytes_mut().fill(byte);
        buf
    }
    /// The elements, packed as the ABI lays them out.
    pub fn of<E: Elem>(values: &[E]) -> Buf {
        let mut buf = Buf::zeroed(E::DTYPE.bytes_for(values.len() as u64).unwrap());
        for (i, &v) in values.iter().enumerate() {
            put(buf.bytes_mut(), i, v);
        }
        buf
    }
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `words` holds at least `len` bytes.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
    /// The pointer argument for this buffer.
    pub fn arg(&mut self) -> Vec<u8> {
        ptr_arg(self.words.as_mut_ptr().cast())
    }
    /// The first `n` elements.
    pub fn elems<E: Elem>(&self, n: usize) -> Vec<E> {
        (0..n).map(|i| get(self.bytes(), i)).collect()
    }
}

/// Element `i` of ABI-laid-out bytes (little-endian host assumed, as on
/// every machine the fake backend runs on).
pub(super) fn get<E: Elem>(bytes: &[u8], i: usize) -> E {
    if E::DTYPE.is_packed() {
        E::from_bits(u64::from(bytes[i / 2] >> (i % 2 * 4)))
    } else {
        let w = E::DTYPE.scalar_bytes();
        let mut raw = [0u8; 8];
        raw[..w].copy_from_slice(&bytes[i * w..(i + 1) * w]);
        E::from_bits(u64::from_le_bytes(raw))
    }
}

/// Sets element `i` of ABI-laid-out bytes.
pub(super) fn put<E: Elem>(bytes: &mut [u8], i: usize, v: E) {
    let bits = v.to_bits();
    if E::DTYPE.is_packed() {
        let shift = i % 2 * 4;
        bytes[i / 2] = (bytes[i / 2] & !(0xF << shift)) | ((bits as u8 & 0xF) << shift);
    } else {
        let w = E::DTYPE.scalar_bytes();
        bytes[i * w..(i + 1) * w].copy_from_slice(&bits.to_le_bytes()[..w]);
    }
}

/// A pointer argument.
pub(super) fn ptr_arg(p: *mut u8) -> Vec<u8> {
    (p as usize as u64).to_ne_bytes().to_vec()
}

/// A `uint64_t` argument.
pub(super) fn u64_arg(n: u64) -> Vec<u8> {
    n.to_ne_bytes().to_vec()
}

/// A scalar argument of type `E` (one byte, low nibble, for 4-bit types).
pub(super) fn scalar_arg<E: Elem>(v: E) -> Vec<u8> {
    v.to_bits().to_le_bytes()[..E::DTYPE.scalar_bytes()].to_vec()
}

/// Whether two values are the same: equal bits, or both NaN.
pub(super) fn same<E: Elem>(a: E, b: E) -> bool {
    a.to_bits() == b.to_bits() || (E::DTYPE.class() == Class::Float && a.to_f64().is_nan() && b.to_f64().is_nan())
}

/// Asserts that `got` equals `want` element for element.
pub(super) fn check<E: Elem>(what: &str, got: &[E], want: &[E]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what}: element {i}: got {:#x}, want {:#x}", g.to_bits(), w.to_bits());
    }
}
