//! Each rule of the checker on a small header in the style cbindgen writes,
//! measured by the real C compiler: the baseline text, then one edit.
use super::*;
use crate::describe::describe_headers;
use crate::scratch::Scratch;

const BASE: &str = r#"
#include <stddef.h>
#include <stdint.h>
#define XDAL_ABI_VERSION_MAJOR 1
#define XDAL_ABI_VERSION_MINOR 0
#define XDAL_VERSION_MAJOR 1
#define XDAL_VERSION_MINOR 0
#define XDAL_VERSION_PATCH 0
#define XDAL_FLAG_A 1
#define XDAL_FLAGS_ALL XDAL_FLAG_A
typedef enum xdal_status {
  XDAL_SUCCESS = 0,
  XDAL_ERROR_X = 1,
} xdal_status;
typedef enum xdal_status xdal_status_t;
typedef struct xdal_props {
  size_t struct_size;
  uint32_t a;
  uint64_t b;
} xdal_props;
typedef struct xdal_dim3 {
  uint32_t x;
  uint32_t y;
} xdal_dim3;
typedef struct xdal_table {
  size_t struct_size;
  const char *name;
  /** Required. Allocates. */
  xdal_status_t (*alloc)(int n);
  /** Fallback: a loop. */
  xdal_status_t (*copy)(int n);
} xdal_table;
xdal_status_t xdal_set(int device);
xdal_status_t xdal_get(xdal_props *props);
"#;

fn describe(text: &str) -> Description {
    let scratch = Scratch::new("compare-test").unwrap();
    std::fs::write(scratch.path().join("xdal.h"), text).unwrap();
    let mut d = describe_headers(scratch.path()).unwrap();
    d.soname = Some("libxdal.so.1".into());
    for f in &mut d.functions {
        f.exported = true;
    }
    d.symbols = d.functions.iter().map(|f| f.name.clone()).collect();
    d.symbols.sort();
    d
}

/// Compares BASE with BASE edited by replacing `from` with `to`.
fn edit(from: &str, to: &str) -> Report {
    assert!(BASE.contains(from), "the edit must apply: {from}");
    compare(&describe(BASE), &describe(&BASE.replacen(from, to, 1)), "1.0", None)
}

fn breaks(r: &Report) -> Vec<&str> {
    r.messages(Kind::Break).collect()
}

fn has_break(r: &Report, needle: &str) {
    assert!(breaks(r).iter().any(|m| m.contains(needle)), "no break naming `{needle}` in {:#?}", r.findings);
}

#[test]
fn identical_builds_have_no_findings() {
    let r = compare(&describe(BASE), &describe(BASE), "1.0", None);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
}

#[test]
fn field_inserted_in_the_middle() {
    let r = edit("  uint32_t a;\n", "  uint32_t a;\n  uint64_t c;\n");
    has_break(&r, "struct `xdal_props`: field `c` inserted in the middle (before `b`)");
    has_break(&r, "field `b` moved from offset 16 to 24");
    let r = edit("  size_t struct_size;\n  uint32_t a;\n", "  size_t struct_size;\n  uint64_t c;\n  uint32_t a;\n");
    has_break(&r, "field `a` moved from offset 8 to 16; so did the 1 after it, through `b`");
}

#[test]
fn int_parameter_widened() {
    let r = edit("xdal_set(int device)", "xdal_set(int64_t device)");
    has_break(&r, "parameter 1 (`device`) of `xdal_set` changed type from `int` to `int64_t`");
}

#[test]
fn same_width_spelling_is_not_a_change() {
    let r = edit("xdal_set(int device)", "xdal_set(int32_t device)");
    assert!(breaks(&r).is_empty(), "{:#?}", r.findings);
}

#[test]
fn function_removed() {
    let mut cur = describe(&BASE.replacen("xdal_status_t xdal_set(int device);\n", "", 1));
    cur.symbols.retain(|s| s != "xdal_set");
    let r = compare(&describe(BASE), &cur, "1.0", None);
    has_break(&r, "symbol `xdal_set` removed");
}

#[test]
fn function_renamed_is_named_as_such() {
    let r = edit("xdal_set(int device)", "xdal_set_device(int device)");
    has_break(&r, "symbol `xdal_set` removed from the library (renamed to `xdal_set_device`?)");
}

#[test]
fn table_entry_inserted_in_the_middle() {
    let r = edit(
        "  /** Fallback: a loop. */\n",
        "  /** Fallback: none. */\n  xdal_status_t (*fill)(int n);\n  /** Fallback: a loop. */\n",
    );
    has_break(&r, "backend table `xdal_table`: entry `fill` inserted in the middle (before `copy`)");
    has_break(&r, "entry `copy` moved from offset 24 to 32, index 3 to 4");
}

#[test]
fn table_entries_reordered() {
    let r = edit(
        "  /** Required. Allocates. */\n  xdal_status_t (*alloc)(int n);\n  /** Fallback: a loop. */\n  xdal_status_t (*copy)(int n);\n",
        "  /** Fallback: a loop. */\n  xdal_status_t (*copy)(int n);\n  /** Required. Allocates. */\n  xdal_status_t (*alloc)(int n);\n",
    );
    has_break(&r, "entry `alloc` moved from offset 16 to 24, index 2 to 3");
    has_break(&r, "entry `copy` moved from offset 24 to 16, index 3 to 2");
}

#[test]
fn new_required_entry() {
    let r = edit("} xdal_table;", "  /** Required. Resets. */\n  xdal_status_t (*reset)(int n);\n} xdal_table;");
    has_break(&r, "backend table `xdal_table`: new entry `reset` is Required");
}

#[test]
fn new_entry_required_when_an_old_one_is_set() {
    let r = edit(
        "} xdal_table;",
        "  /** Frees. Required when `alloc` is set. */\n  xdal_status_t (*free)(int n);\n} xdal_table;",
    );
    has_break(&r, "new entry `free` is Required when `alloc` is set");
}

#[test]
fn existing_entry_became_required() {
    let r = edit("/** Fallback: a loop. */", "/** Required. Copies. */");
    has_break(&r, "existing entry `copy` became Required (was optional)");
}

#[test]
fn enum_renumbered_or_removed() {
    let r = edit("XDAL_ERROR_X = 1,", "XDAL_ERROR_X = 2,");
    has_break(&r, "enum `xdal_status`: `XDAL_ERROR_X` renumbered from 1 to 2");
    let r = edit("  XDAL_ERROR_X = 1,\n", "");
    has_break(&r, "enum `xdal_status`: value `XDAL_ERROR_X` (1) removed");
}

#[test]
fn field_retyped_and_alignment_changed() {
    let r = edit("  uint32_t x;\n", "  uint64_t x;\n");
    has_break(&r, "struct `xdal_dim3`: field `x` changed type from `uint32_t` to `uint64_t`");
    has_break(&r, "struct `xdal_dim3`: alignment changed from 4 to 8");
}

#[test]
fn non_extensible_struct_grew() {
    let r = edit("  uint32_t y;\n", "  uint32_t y;\n  uint32_t z;\n");
    has_break(&r, "struct `xdal_dim3`: field `z` appended, but the struct is not extensible");
    has_break(&r, "struct `xdal_dim3`: size grew from 8 to 12 bytes");
}

#[test]
fn pure_additions_pass() {
    let text = BASE
        .replacen("  XDAL_ERROR_X = 1,\n", "  XDAL_ERROR_X = 1,\n  XDAL_ERROR_Y = 2,\n", 1)
        .replacen("  uint64_t b;\n", "  uint64_t b;\n  uint32_t c;\n", 1)
        .replacen("} xdal_table;", "  /** Fallback: none. */\n  xdal_status_t (*reset)(int n);\n} xdal_table;", 1)
        .replacen(
            "#define XDAL_FLAGS_ALL XDAL_FLAG_A",
            "#define XDAL_FLAG_B 2\n#define XDAL_FLAGS_ALL (XDAL_FLAG_A | XDAL_FLAG_B)",
            1,
        )
        + "xdal_status_t xdal_reset(void);\n";
    let r = compare(&describe(BASE), &describe(&text), "1.0", None);
    assert!(breaks(&r).is_empty(), "{:#?}", r.findings);
    let added: Vec<&str> = r.messages(Kind::Addition).collect();
    for needle in [
        "new function `xdal_status_t xdal_reset(void)`",
        "new symbol `xdal_reset`",
        "struct `xdal_props`: field `c` appended",
        "backend table `xdal_table`: entry `reset` appended",
        "enum `xdal_status`: new value `XDAL_ERROR_Y` = 2",
        "flag mask `XDAL_FLAGS_ALL` grew from 0x1 to 0x3",
    ] {
        assert!(added.iter().any(|m| m.contains(needle)), "no addition `{needle}` in {added:#?}");
    }
}

#[test]
fn soname_and_versions() {
    let base = describe(BASE);
    let mut cur = describe(BASE);
    cur.soname = Some("libxdal.so.2".into());
    has_break(&compare(&base, &cur, "1.0", None), "SONAME changed from `libxdal.so.1` to `libxdal.so.2`");
    has_break(&consistency(&cur, None), "SONAME `libxdal.so.2` does not carry the ABI major 1");
    let r = compare(&describe(&BASE.replace("MINOR 0", "MINOR 3")), &base, "1.3", None);
    has_break(&r, "ABI version went backwards: baseline 1.3 is ABI 1.3, the headers say 1.0");
    has_break(&r, "library version went backwards");
}

/// The manifest a library built from BASE would print: the front requires
/// `alloc`, two built-ins, BASE's layouts.
fn manifest() -> crate::manifest::Manifest {
    crate::manifest::Manifest::from_json(
        r#"{"format": "xdal-abi-manifest/1", "abi_version": [1, 0], "required_entries": ["alloc"],
            "builtins": [{"name": "fill_f32", "arg_sizes": [8, 8, 4]}, {"name": "add_f32", "arg_sizes": [8, 8, 8, 8]}],
            "layouts": [
              {"name": "xdal_props", "size": 24, "align": 8, "fields": [
                {"name": "struct_size", "offset": 0, "size": 8}, {"name": "a", "offset": 8, "size": 4},
                {"name": "b", "offset": 16, "size": 8}]},
              {"name": "xdal_dim3", "size": 8, "align": 4, "fields": [
                {"name": "x", "offset": 0, "size": 4}, {"name": "y", "offset": 4, "size": 4}]},
              {"name": "xdal_table", "size": 32, "align": 8, "fields": [
                {"name": "struct_size", "offset": 0, "size": 8}, {"name": "name", "offset": 8, "size": 8},
                {"name": "alloc", "offset": 16, "size": 8}, {"name": "copy", "offset": 24, "size": 8}]}
            ]}"#,
    )
    .unwrap()
}

/// BASE frozen with the manifest, as `freeze --manifest` records it.
fn frozen() -> Description {
    let mut base = describe(BASE);
    manifest().record_in(&mut base);
    base
}

#[test]
fn the_manifest_of_an_unchanged_build_has_no_findings() {
    let r = compare(&frozen(), &describe(BASE), "1.0", Some(&manifest()));
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert!(consistency(&describe(BASE), Some(&manifest())).findings.is_empty());
}

#[test]
fn an_entry_the_front_newly_requires_is_a_break() {
    let mut m = manifest();
    m.required_entries.push("copy".into());
    has_break(
        &compare(&frozen(), &describe(BASE), "1.0", Some(&m)),
        "the front now requires backend-table entry `copy`",
    );
    // A baseline without a recorded set: its headers' Required marks stand for it.
    has_break(&compare(&describe(BASE), &describe(BASE), "1.0", Some(&m)), "requires backend-table entry `copy`");
    m.required_entries.clear();
    let r = compare(&frozen(), &describe(BASE), "1.0", Some(&m));
    assert_eq!(r.count(Kind::Break), 0, "{:#?}", r.findings);
    assert!(r.messages(Kind::Addition).any(|a| a.contains("`alloc` is no longer required")));
}

#[test]
fn built_ins_may_be_added_never_removed_or_resized() {
    let mut m = manifest();
    m.builtins.push(crate::model::BuiltinKernel { name: "mul_f32".into(), arg_sizes: vec![8, 8, 8, 8] });
    let r = compare(&frozen(), &describe(BASE), "1.0", Some(&m));
    assert_eq!(r.count(Kind::Break), 0, "{:#?}", r.findings);
    assert!(r.messages(Kind::Addition).any(|a| a.contains("1 built-in kernel(s) added: mul_f32")));
    m.builtins[0].name = "set_f32".into();
    m.builtins[1].arg_sizes[3] = 4;
    let r = compare(&frozen(), &describe(BASE), "1.0", Some(&m));
    has_break(&r, "built-in kernel `fill_f32` removed (or renamed)");
    has_break(&r, "built-in kernel `add_f32` takes arguments of [8, 8, 8, 4] bytes, 1.0 of [8, 8, 8, 8]");
}

#[test]
fn a_layout_the_headers_do_not_describe_is_named_from_the_library() {
    let mut m = manifest();
    let dim3 = m.layouts.iter_mut().find(|l| l.name == "xdal_dim3").unwrap();
    (dim3.size, dim3.align) = (16, 16);
    let r = compare(&frozen(), &describe(BASE), "1.0", Some(&m));
    has_break(&r, "struct `xdal_dim3`: the headers describe 8 bytes aligned to 4, the library lays it out in 16");
    has_break(&r, "struct `xdal_dim3` as the library lays it out: alignment changed from 4 to 16 bytes");
    // Headers that do not compile are a break of their own; the layouts
    // still come from the library.
    let mut broken = describe(BASE);
    broken.probe_failure = Some("xdal.h:3: error: field 'grid' has incomplete type".into());
    has_break(&consistency(&broken, Some(&m)), "the headers do not compile");
    has_break(&compare(&frozen(), &broken, "1.0", Some(&m)), "`xdal_dim3` as the library lays it out: size changed");
}
