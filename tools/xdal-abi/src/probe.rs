//! Exact layouts from the C compiler: a small program that includes the
//! headers and prints sizeof/alignof of every struct, offsetof and sizeof
//! of every field, sizeof and the values of every enum, and the values of
//! the integer macros. Built with the system C compiler (`$CC`, else `cc`),
//! so the numbers are the ones a consumer of these headers gets.
use crate::scratch::Scratch;
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to measure.
#[derive(Default)]
pub struct Request {
    /// (key, C spelling such as `struct xdal_dim3`, field names).
    pub structs: Vec<(String, String, Vec<String>)>,
    /// (key, C spelling such as `enum xdal_status`, enumerator names).
    pub enums: Vec<(String, String, Vec<String>)>,
    /// Macros whose value looks like an integer expression.
    pub macros: Vec<String>,
}

/// A struct as the compiler lays it out.
#[derive(Debug, PartialEq, Eq)]
pub struct StructLayout {
    pub size: u64,
    pub align: u64,
    /// (offset, size) per field, in order.
    pub fields: Vec<(u64, u64)>,
}

#[derive(Default, Debug)]
pub struct Layouts {
    pub structs: HashMap<String, StructLayout>,
    /// size, and the value per enumerator in order.
    pub enums: HashMap<String, (u64, Vec<i64>)>,
    pub macros: HashMap<String, i64>,
}

/// Whether a macro's replacement text is worth evaluating as an integer.
pub fn looks_integral(value: &str) -> bool {
    !value.is_empty()
        && value.chars().all(|c| c.is_ascii_alphanumeric() || " _()|&^~+-*/%<>".contains(c))
        && !value.contains("void")
}

fn source(headers: &[String], request: &Request) -> String {
    let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n");
    for h in headers {
        let _ = writeln!(c, "#include \"{h}\"");
    }
    c.push_str("int main(void) {\n");
    for (key, spelling, fields) in &request.structs {
        let _ = writeln!(c, "  printf(\"S {key} %zu %zu\\n\", sizeof({spelling}), _Alignof({spelling}));");
        for f in fields {
            let _ = writeln!(
                c,
                "  printf(\"F {key} %zu %zu\\n\", offsetof({spelling}, {f}), sizeof((({spelling} *)0)->{f}));"
            );
        }
    }
    for (key, spelling, values) in &request.enums {
        let _ = writeln!(c, "  printf(\"E {key} %zu\\n\", sizeof({spelling}));");
        for v in values {
            let _ = writeln!(c, "  printf(\"V {key} %lld\\n\", (long long)({v}));");
        }
    }
    for m in &request.macros {
        let _ = writeln!(c, "  printf(\"M {m} %lld\\n\", (long long)({m}));");
    }
    c.push_str("  return 0;\n}\n");
    c
}

/// The system C compiler: `$CC`, else `cc`.
fn c_compiler() -> String {
    std::env::var("CC").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "cc".into())
}

/// Compiles `source` (C, `name.c`) in `scratch` with the system C compiler
/// and `flags` (before the source) and `libs` (after it). The inner error:
/// the compiler refused it, with its messages; the outer: it could not be
/// run at all.
pub fn compile(
    scratch: &Scratch,
    name: &str,
    source: &str,
    flags: &[OsString],
    libs: &[&str],
) -> Result<Result<PathBuf, String>, String> {
    let src = scratch.path().join(format!("{name}.c"));
    let exe = scratch.path().join(name);
    std::fs::write(&src, source).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let cc = c_compiler();
    let out = Command::new(&cc)
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(libs)
        .output()
        .map_err(|e| format!("cannot run the C compiler `{cc}` (set CC): {e}"))?;
    if !out.status.success() {
        return Ok(Err(format!("{cc}: {}", String::from_utf8_lossy(&out.stderr))));
    }
    Ok(Ok(exe))
}

/// Compiles and runs the probe against the headers in `dir`. The inner
/// error: the headers do not compile (a finding about them); the outer: the
/// probe could not be made or run at all.
pub fn measure(dir: &Path, headers: &[String], request: &Request) -> Result<Result<Layouts, String>, String> {
    let scratch = Scratch::new("probe")?;
    let flags = ["-std=c11".into(), "-I".into(), dir.as_os_str().to_owned()];
    let exe = match compile(&scratch, "probe", &source(headers, request), &flags, &[])? {
        Ok(exe) => exe,
        Err(messages) => return Ok(Err(format!("the headers do not compile as C11, {messages}"))),
    };
    let run = Command::new(&exe).output().map_err(|e| format!("cannot run the layout probe: {e}"))?;
    if !run.status.success() {
        return Err("the layout probe failed".into());
    }
    parse(&String::from_utf8_lossy(&run.stdout)).map(Ok)
}

fn parse(text: &str) -> Result<Layouts, String> {
    let mut l = Layouts::default();
    let num = |s: Option<&str>| -> Result<u64, String> {
        s.and_then(|s| s.parse().ok()).ok_or_else(|| "garbled probe output".to_string())
    };
    for line in text.lines() {
        let mut w = line.split(' ');
        let (kind, key) = (w.next(), w.next().unwrap_or_default().to_string());
        match kind {
            Some("S") => {
                l.structs.insert(key, StructLayout { size: num(w.next())?, align: num(w.next())?, fields: Vec::new() });
            }
            Some("F") => {
                let field = (num(w.next())?, num(w.next())?);
                l.structs.get_mut(&key).ok_or("field before struct")?.fields.push(field);
            }
            Some("E") => {
                l.enums.insert(key, (num(w.next())?, Vec::new()));
            }
            Some("V") => {
                let v = w.next().and_then(|s| s.parse().ok()).ok_or("garbled enum value")?;
                l.enums.get_mut(&key).ok_or("value before enum")?.1.push(v);
            }
            Some("M") => {
                let v = w.next().and_then(|s| s.parse().ok()).ok_or("garbled macro value")?;
                l.macros.insert(key, v);
            }
            _ => return Err(format!("unexpected probe output `{line}`")),
        }
    }
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_macros() {
        assert!(looks_integral("1"));
        assert!(looks_integral("(XDAL_A | XDAL_B)"));
        assert!(looks_integral("0x10u"));
        assert!(!looks_integral("\"1.0\""));
        assert!(!looks_integral("((void *)0)"));
    }

    #[test]
    fn measures_a_header() {
        let scratch = Scratch::new("probe-test").unwrap();
        let header = "#include <stdint.h>\n#define T_N (1 << 4)\ntypedef enum t_e { T_A = 3, T_B } t_e;\n\
                      typedef struct t_s { char c; uint64_t x; } t_s;\n";
        std::fs::write(scratch.path().join("t.h"), header).unwrap();
        let request = Request {
            structs: vec![("t_s".into(), "struct t_s".into(), vec!["c".into(), "x".into()])],
            enums: vec![("t_e".into(), "enum t_e".into(), vec!["T_A".into(), "T_B".into()])],
            macros: vec!["T_N".into()],
        };
        let l = measure(scratch.path(), &["t.h".into()], &request).unwrap().unwrap();
        assert_eq!(l.structs["t_s"], StructLayout { size: 16, align: 8, fields: vec![(0, 1), (8, 8)] });
        assert_eq!(l.enums["t_e"], (4, vec![3, 4]));
        assert_eq!(l.macros["T_N"], 16);
    }
}
