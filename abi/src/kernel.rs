//! Kernels: launch geometry, arguments, what a host kernel sees, and the
//! element types of the built-in kernels.
use crate::xdal_status_raw;
use core::ffi::c_void;

/// The most dimensions a strided built-in kernel (`copy_strided_<t>`,
/// `cast_strided_<s>_<d>`, `fill_strided_<t>`, ...) walks: its sizes and
/// strides arguments are arrays of this many 64-bit entries, passed by
/// value, whatever `ndim` is.
pub const XDAL_STRIDED_MAX_DIMS: u32 = 16;

/// A grid or block extent, or a block index.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct xdal_dim3 {
    /// Extent or index along x.
    pub x: u32,
    /// Extent or index along y.
    pub y: u32,
    /// Extent or index along z.
    pub z: u32,
}
/// See `struct xdal_dim3`.
pub type xdal_dim3_t = xdal_dim3;

/// One kernel argument: `size` bytes at `value`, copied at launch, so the
/// caller may reuse the storage as soon as `xdal_launch_kernel` returns.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct xdal_kernel_arg {
    /// The argument's bytes.
    pub value: *const c_void,
    /// How many bytes (8 for a pointer).
    pub size: usize,
}
/// See `struct xdal_kernel_arg`.
pub type xdal_kernel_arg_t = xdal_kernel_arg;

/// What a host kernel sees of its launch, once per block. Extensible
/// (`struct_size`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct xdal_kernel_context {
    /// Size of this struct as the library filled it.
    pub struct_size: usize,
    /// Blocks in the grid.
    pub grid_dim: xdal_dim3_t,
    /// Threads in a block.
    pub block_dim: xdal_dim3_t,
    /// This block's index in the grid.
    pub block_idx: xdal_dim3_t,
    /// This block's shared memory, `shared_mem_bytes` long (NULL if 0); not
    /// initialised, as on a GPU.
    pub shared_mem: *mut c_void,
    /// Size of `shared_mem`, as requested at launch.
    pub shared_mem_bytes: usize,
}
/// See `struct xdal_kernel_context`.
pub type xdal_kernel_context_t = xdal_kernel_context;

/// A kernel for backends that run host code: called once per block, it
/// loops over the block's threads itself. `args[i]` points to a copy of the
/// i-th argument's bytes; device pointers among them are directly usable
/// by the kernel. A status other than `XDAL_SUCCESS` makes the stream
/// report `XDAL_ERROR_LAUNCH_FAILED`. It must return: a C++ exception (or a
/// `longjmp`) that leaves it aborts the process, as out of any C callback,
/// so a kernel that may throw catches inside and returns a status. On the
/// built-in backends, xdal calls that wait for stream work (synchronize,
/// blocking copies) return `XDAL_ERROR_NOT_SUPPORTED` from inside it.
pub type xdal_host_kernel_t =
    Option<unsafe extern "C" fn(ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> xdal_status_raw>;

/// The object behind an `xdal_module_t`. Never defined: only pointed to.
pub struct xdal_module_s {
    _opaque: [u8; 0],
}
/// A loaded set of kernels.
pub type xdal_module_t = *mut xdal_module_s;

/// The object behind an `xdal_function_t`. Never defined: only pointed to.
pub struct xdal_function_s {
    _opaque: [u8; 0],
}
/// A kernel that can be launched.
pub type xdal_function_t = *mut xdal_function_s;

/// Element types of the built-in kernels. F8 and F4 follow the OCP
/// microscaling formats; F4 and I4 pack two values a byte, the element with
/// the lower index in the low nibble. F16, BF16, F8 and F4 values cross the
/// ABI as their raw bits.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum xdal_dtype {
    /// IEEE binary64.
    XDAL_DTYPE_F64 = 0,
    /// IEEE binary32.
    XDAL_DTYPE_F32 = 1,
    /// IEEE binary16.
    XDAL_DTYPE_F16 = 2,
    /// bfloat16: binary32's exponent, 7 fraction bits.
    XDAL_DTYPE_BF16 = 3,
    /// OCP E4M3: no infinities, one NaN per sign, max 448; conversions saturate.
    XDAL_DTYPE_F8_E4M3 = 4,
    /// OCP E5M2: IEEE-like, with infinities and NaNs, max 57344.
    XDAL_DTYPE_F8_E5M2 = 5,
    /// OCP E2M1: values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; no
    /// infinity or NaN; conversions saturate.
    XDAL_DTYPE_F4_E2M1 = 6,
    /// 64-bit signed integer.
    XDAL_DTYPE_I64 = 7,
    /// 32-bit signed integer.
    XDAL_DTYPE_I32 = 8,
    /// 16-bit signed integer.
    XDAL_DTYPE_I16 = 9,
    /// 8-bit signed integer.
    XDAL_DTYPE_I8 = 10,
    /// 8-bit unsigned integer.
    XDAL_DTYPE_U8 = 11,
    /// 4-bit signed integer, -8 to 7.
    XDAL_DTYPE_I4 = 12,
    /// One byte, 0 or 1.
    XDAL_DTYPE_BOOL = 13,
}
/// See `enum xdal_dtype`.
pub type xdal_dtype_t = xdal_dtype;
