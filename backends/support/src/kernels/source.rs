//! The OpenCL C text of the built-in programs, assembled from the `.cl`
//! files of this directory: one program per element type `t`, holding the
//! kernels of `t` itself and every cast from `t`, so that a process builds
//! only the programs of the types it uses.
//!
//! The 56 casts from `t` (dense and strided, to each type, rounding or
//! truncating) are two kernels, `cast_from_<t>` and `cast_strided_from_<t>`,
//! whose last argument, the route (`route`), picks the cast: PoCL compiles
//! each kernel separately, for each work-group size it runs with, and the
//! first run of all 910 kernels as kernels of their own took 12 minutes.
//! The dense kernel switches once per launch to a loop per route; the
//! strided one walks once and converts each element out of line, since a
//! walk per route made a kernel of 20 s to compile. `copy_strided_<t>` is
//! the strided cast to `t`.
//!
//! The `.cl` templates are written once for a type `T` (or a pair `S`, `D`)
//! that a `#define` names before each copy is pasted in; the prelude and
//! types.cl define what they call. They are OpenCL C that also compiles as
//! CUDA C++: dialect.cl, first in every program, maps what they use.
use super::dtype::{convert_expr, DTYPES};
use std::fmt::Write;

const DIALECT: &str = include_str!("dialect.cl");
const PRELUDE: &str = include_str!("prelude.cl");
const TYPES: &str = include_str!("types.cl");
const ELEMENTWISE: &str = include_str!("elementwise.cl");
const REDUCE: &str = include_str!("reduce.cl");
const MATMUL: &str = include_str!("matmul.cl");
const FILL_STRIDED: &str = include_str!("fill_strided.cl");
const CAST: &str = include_str!("cast.cl");
const STRIDED: &str = include_str!("strided.cl");

/// How many programs there are: one per element type.
pub(crate) const PROGRAMS: usize = DTYPES.len();

/// The route of the cast to `d` (`trunc`: truncating), the last argument
/// of `cast_from_<s>` and `cast_strided_from_<s>`.
pub(crate) fn route(d: usize, trunc: bool) -> u32 {
    (2 * d + usize::from(trunc)) as u32
}

/// The dense and the strided cast kernel of source type `s`.
pub(crate) fn cast_kernels(s: usize) -> [String; 2] {
    let name = DTYPES[s].name;
    [format!("cast_from_{name}"), format!("cast_strided_from_{name}")]
}

/// The source of program `t` (a `DTYPES` index).
pub(crate) fn program(t: usize) -> String {
    let name = DTYPES[t].name;
    let mut out = String::with_capacity(256 * 1024);
    out.push_str(DIALECT);
    out.push_str(PRELUDE);
    out.push_str(TYPES);
    // `write!` to a String cannot fail.
    let _ = writeln!(out, "#define T {name}");
    for template in [ELEMENTWISE, REDUCE, MATMUL, FILL_STRIDED] {
        out.push_str(template);
    }
    out.push_str("#undef T\n");
    let mut routes = Vec::new();
    for (d, to) in DTYPES.iter().enumerate() {
        for trunc in [false, true] {
            let dense = format!("cast_{name}_{}{}", to.name, if trunc { "_trunc" } else { "" });
            instance(&mut out, CAST, &[("CAST_NAME", &dense)], t, d, trunc);
            routes.push((route(d, trunc), d, dense, convert_expr(t, d, trunc)));
        }
    }
    let [dense_kernel, _] = cast_kernels(t);
    let _ = writeln!(
        out,
        "\n// The casts from {name}, by route (2 * destination type + truncating).\n\
         __kernel void {dense_kernel}(__global const {name}_s *src, __global void *dst, ulong n, uint route) {{\n  \
         switch (route) {{"
    );
    for (route, d, dense, _) in &routes {
        let _ = writeln!(out, "  case {route}: {dense}(src, (__global {}_s *)dst, n); break;", DTYPES[*d].name);
    }
    let _ = writeln!(
        out,
        "  }}\n}}\n\n// Element s of src converted into element d of dst, by route.\n\
         OUT_OF_LINE void cast_element_from_{name}(uint route, __global const {name}_s *src, long s, __global void *dst, \
         long d) {{\n  {name}_v x = {name}_get(src, s);\n  switch (route) {{"
    );
    for (route, d, _, convert) in &routes {
        let to = DTYPES[*d].name;
        let _ = writeln!(out, "  case {route}: {to}_put((__global {to}_s *)dst, d, {convert}); break;");
    }
    out.push_str("  }\n}\n\n");
    let packed: Vec<String> =
        DTYPES.iter().enumerate().filter(|(_, to)| to.is_packed()).map(|(d, _)| format!("route >> 1 == {d}")).collect();
    let _ = writeln!(
        out,
        "// Elements a work item's run is a multiple of: 2 for a packed destination.\n\
         INLINE ulong route_quantum(uint route) {{ return {} ? 2 : 1; }}",
        packed.join(" || ")
    );
    let _ = writeln!(out, "#define T {name}");
    out.push_str(STRIDED);
    out.push_str("#undef T\n");
    out
}

/// One copy of a pair template with its macros defined around it.
fn instance(out: &mut String, template: &str, names: &[(&str, &str)], s: usize, d: usize, trunc: bool) {
    let defines = [("S", DTYPES[s].name.to_string()), ("D", DTYPES[d].name.to_string())]
        .into_iter()
        .chain(names.iter().map(|&(macro_name, value)| (macro_name, value.to_string())))
        .chain([("CONVERT(x)", convert_expr(s, d, trunc))]);
    let mut undefs = Vec::new();
    for (macro_name, value) in defines {
        let _ = writeln!(out, "#define {macro_name} {value}");
        undefs.push(macro_name.trim_end_matches("(x)").to_string());
    }
    out.push_str(template);
    for macro_name in undefs {
        let _ = writeln!(out, "#undef {macro_name}");
    }
}
