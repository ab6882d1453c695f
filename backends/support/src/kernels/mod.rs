//! The built-in kernels of the device backends (OpenCL, CUDA): every
//! `xdal_module_get_builtin` kernel of ABI 1.0 and 1.1 for the fourteen
//! element types, written once as OpenCL C templates, giving bit for bit
//! what the fake backend's kernels give.
//!
//! Each built-in is a device kernel of the same name in one of fourteen
//! programs (`Builtin::program`), one per element type: the type's own
//! kernels and every cast from it (source.rs assembles them from the `.cl`
//! templates here). The host side checks what the fake kernels refuse
//! (NULL arrays, overflowing sizes, misalignment, unsupported overlaps)
//! before anything is enqueued, since a device kernel cannot report a
//! status, and picks the number of work items (plan.rs). A backend keeps
//! only what is its runtime's: building the programs and passing the
//! arguments.
//!
//! The programs are one text per type in two languages (dialect.cl picks
//! by the preprocessor). As OpenCL C they need OpenCL C 1.2 with
//! `cl_khr_fp64` and no build option; they turn floating-point contraction
//! off themselves. As CUDA C++ (`cuda_program`) they need NVRTC with C++17
//! and the options that keep floats exact (tools/cuda_ptx.py); the CUDA
//! backend loads the PTX compiled from them ahead of time, one file per
//! program named by `program_stem`.
mod check;
mod dtype;
mod kind;
mod plan;
mod source;

use crate::strided::MAX_DIMS;
use crate::Catalogue;
use dtype::DTYPES;
use kind::{Kind, PER_PAIR_1_1, PER_TYPE_1_0, PER_TYPE_1_1};
use std::sync::OnceLock;

/// How a launch argument reaches the device kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// An 8-byte device address (OpenCL: an SVM pointer).
    Pointer,
    /// Bytes passed by value as given.
    Value,
}

/// The launch's argument values, each exactly its declared size.
pub struct ArgValues<'a>(pub &'a [&'a [u8]]);

impl ArgValues<'_> {
    /// Argument `i` read as a native-endian u64 (pointers and counts).
    pub fn u64(&self, i: usize) -> u64 {
        u64::from_ne_bytes(self.0[i][..8].try_into().expect("an 8-byte argument"))
    }

    /// Argument `i`, a `uint64_t sizes[16]`.
    pub fn sizes(&self, i: usize) -> [u64; MAX_DIMS] {
        std::array::from_fn(|k| u64::from_ne_bytes(self.0[i][8 * k..8 * k + 8].try_into().expect("8 bytes")))
    }

    /// Argument `i`, an `int64_t strides[16]`.
    pub fn strides(&self, i: usize) -> [i64; MAX_DIMS] {
        self.sizes(i).map(|word| word as i64)
    }
}

/// What a launch of a built-in enqueues: `work_items` work items of a 1-D
/// range (0: nothing to run, the launch completes in stream order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Work items of a 1-D range (0: nothing to run), one of two sizes
    /// whatever the work, for runtimes that compile a kernel for each range
    /// size they run it with (plan.rs).
    pub work_items: usize,
    /// The independent units the work splits into (elements, bytes of a
    /// packed type, outputs): a runtime that compiles nothing per range size
    /// (CUDA) may run up to this many work items instead, where a unit each
    /// makes neighbouring threads touch neighbouring memory. 0 or 1 when
    /// `work_items` is: nothing to run, or one work item doing everything
    /// in order.
    pub units: usize,
}

/// One built-in kernel.
pub struct Builtin {
    /// Its name, e.g. `"cast_f32_bf16"`.
    pub name: String,
    /// Index of the program (`program_source`) that defines it: the
    /// `xdal_dtype_t` value of its (source) type.
    pub program: usize,
    /// The device kernel that runs it: of the same name, or for a cast the
    /// source type's cast kernel (source.rs).
    pub kernel: String,
    /// For a cast, the value of the device kernel's extra last argument (a
    /// `uint` after `args`) that picks the cast; set once per function.
    pub route: Option<u32>,
    /// Each argument's kind and exact byte size, in order.
    pub args: Vec<(ArgKind, usize)>,
    kind: Kind,
    /// Its types (`DTYPES` indices): the source and destination of a cast,
    /// otherwise the one type twice.
    types: (usize, usize),
}

impl Builtin {
    /// Checks the argument values as the fake kernel does and plans the
    /// launch; `Err(message)`, naming the kernel, is a refusal (the launch
    /// fails).
    pub fn plan(&self, args: &ArgValues) -> Result<Plan, String> {
        let (s, d) = self.types;
        plan::plan(self.kind, DTYPES[s], DTYPES[d], args).map_err(|message| format!("{}: {message}", self.name))
    }
}

/// All built-in kernels, in a fixed order, with an index by name; built
/// on first use.
fn registry() -> &'static Catalogue<Builtin> {
    static REGISTRY: OnceLock<Catalogue<Builtin>> = OnceLock::new();
    REGISTRY.get_or_init(|| Catalogue::new(build(), |b| &b.name))
}

/// The built-in kernel called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Builtin> {
    registry().find(name)
}

/// Every built-in, in the fake's order.
pub fn all() -> impl Iterator<Item = &'static Builtin> {
    registry().iter()
}

/// How many programs the built-ins live in.
pub fn program_count() -> usize {
    source::PROGRAMS
}

/// The OpenCL C source of program `program` (< `program_count()`).
pub fn program_source(program: usize) -> String {
    assert!(program < program_count(), "built-in program {program} does not exist");
    source::program(program)
}

/// The CUDA C++ source of program `program` (< `program_count()`): the
/// same text as `program_source`, which compiles as either language, under
/// a line saying how it is compiled.
pub fn cuda_program(program: usize) -> String {
    let source = program_source(program);
    format!(
        "// xdal's built-in program {}, as CUDA C++: compiled to PTX by NVRTC with the options of \
         tools/cuda_ptx.py (no contraction: --fmad=false), which bit-exact results need.\n{source}",
        program_stem(program)
    )
}

/// The name of program `program`'s files (`f32` for `f32.ptx`): its
/// element type's name, as in the kernel names.
pub fn program_stem(program: usize) -> &'static str {
    assert!(program < program_count(), "built-in program {program} does not exist");
    DTYPES[program].name
}

/// `dtype_mask` of the device properties: bit `1 << dtype` for each type
/// the built-ins handle, which is all fourteen.
pub fn dtype_mask() -> u64 {
    (0..DTYPES.len()).fold(0, |mask, t| mask | 1 << t)
}

/// One built-in: `kind` over `s` (and `d`), in program `s`.
fn entry(kind: Kind, s: usize, d: usize) -> Builtin {
    let [dense, strided] = source::cast_kernels(s);
    let (kernel, route) = match kind {
        Kind::Cast | Kind::CastTrunc => (dense, Some(source::route(d, kind == Kind::CastTrunc))),
        Kind::CastStrided | Kind::CastStridedTrunc => (strided, Some(source::route(d, kind == Kind::CastStridedTrunc))),
        Kind::CopyStrided => (strided, Some(source::route(s, false))),
        _ => (kind.name(DTYPES[s], DTYPES[d]), None),
    };
    let name = kind.name(DTYPES[s], DTYPES[d]);
    Builtin { name, program: s, kernel, route, args: kind.args(DTYPES[s]), kind, types: (s, d) }
}

/// Every built-in, in the fake's order: per type fill, add, mul, sum,
/// matmul; the casts by source, then destination; per type copy_strided,
/// fill_strided, axpby, sum_dim; per pair cast_trunc, cast_strided,
/// cast_strided_trunc.
fn build() -> Vec<Builtin> {
    let types = 0..DTYPES.len();
    let pairs = || types.clone().flat_map(|s| types.clone().map(move |d| (s, d)));
    let mut list = Vec::new();
    list.extend(types.clone().flat_map(|t| PER_TYPE_1_0.map(|k| entry(k, t, t))));
    list.extend(pairs().map(|(s, d)| entry(Kind::Cast, s, d)));
    list.extend(types.clone().flat_map(|t| PER_TYPE_1_1.map(|k| entry(k, t, t))));
    list.extend(pairs().flat_map(|(s, d)| PER_PAIR_1_1.map(|k| entry(k, s, d))));
    list
}

#[cfg(test)]
mod tests;
