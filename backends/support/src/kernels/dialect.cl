// The two languages every built-in program compiles as, told apart by the
// preprocessor: OpenCL C 1.2 (the OpenCL backend builds the programs at run
// time) and CUDA C++17 (NVRTC compiles them to PTX ahead of time for the
// CUDA backend, tools/cuda-ptx.sh). The templates are OpenCL C; for CUDA,
// what they use is mapped here onto CUDA's built-in functions and
// variables, without any CUDA header, so that NVRTC needs nothing but
// itself. Besides OpenCL C's own names, the templates use
//
//   INLINE       a helper meant to be inlined into its kernels
//   FUNCTION     a helper left to the compiler to inline or not
//   OUT_OF_LINE  a helper compiled once, called (see the prelude for why;
//                inlined for CUDA, see below)
#if defined(__OPENCL_VERSION__)

#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF
#define INLINE static inline
#define FUNCTION static
#define OUT_OF_LINE __attribute__((noinline)) static

#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)

// No pragma turns contraction off in CUDA: the compile does
// (`--fmad=false`, with `--ftz=false`, `--prec-div=true` and
// `--prec-sqrt=true` for IEEE results everywhere).
#define __kernel extern "C" __global__
#define __global
#define INLINE static __device__ inline
#define FUNCTION static __device__
// Inlined, unlike OpenCL's: ptxas (CUDA 12.0 to 13.0, at -O1 and above)
// miscompiles sum's loops calling an out-of-line codec (every f16, E4M3 and
// E5M2 sum came out as zero on an H200, right at -O0 and when inlined), and
// NVRTC compiles ahead of time, so PoCL's compile times do not apply: the
// PTX grows by a few percent.
#define OUT_OF_LINE static __device__ __forceinline__

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
// OpenCL's `long` is 64 bits and its `char` signed; CUDA C++ takes both
// from the host's ABI, which is then one where they are the same.
static_assert(sizeof(long) == 8, "the built-ins need a 64-bit long");
static_assert((char)-1 < 0, "the built-ins need a signed char");

// One-dimensional ranges only: a work item is a thread of the grid.
#define get_global_id(dim) ((ulong)blockIdx.x * blockDim.x + threadIdx.x)
#define get_global_size(dim) ((ulong)gridDim.x * blockDim.x)

// OpenCL's reinterpreting casts, for the types the templates give them.
INLINE uint as_uint(float x) { return __float_as_uint(x); }
INLINE float as_float(uint x) { return __uint_as_float(x); }
INLINE ulong as_ulong(double x) { return (ulong)__double_as_longlong(x); }
INLINE double as_double(ulong x) { return __longlong_as_double((long long)x); }
INLINE char as_char(uchar x) { return (char)x; }

// Leading zero bits, in the argument's type as OpenCL's `clz`.
INLINE uint clz(uint x) { return (uint)__clz((int)x); }
INLINE ulong clz(ulong x) { return (ulong)__clzll((long long)x); }

// min, max, rint, trunc, fabs and isnan are CUDA's own, with OpenCL's
// meaning for the types the templates use.

#else
#error "the built-in kernels compile as OpenCL C or as CUDA C++"
#endif

