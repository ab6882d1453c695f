//! libabigail as a second opinion: `abidw` records the library's ABI from
//! its DWARF, `abidiff` compares it with the baseline's record. abidiff
//! reports layout breaks with its "ABI change" bit and not always the
//! "incompatible" bit, so every non-zero status fails unless a suppression
//! covers it: the ones the policy implies (made here from the baseline's
//! description) and the allow-list committed beside the baseline.
use crate::model::Description;
use std::path::Path;
use std::process::Command;

/// Options that keep the XML free of this machine's paths (file names only)
/// and of line numbers, so that a regenerated baseline differs only where
/// the ABI does.
const ABIDW_OPTIONS: &[&str] = &["--no-comp-dir-path", "--no-corpus-path", "--short-locs", "--no-show-locs"];

fn run(tool: &str, args: &[&std::ffi::OsStr]) -> Result<std::process::Output, String> {
    Command::new(tool).args(args).output().map_err(|e| {
        format!("cannot run `{tool}` ({e}): install libabigail (Debian/Ubuntu: apt-get install abigail-tools), or pass --no-abidiff")
    })
}

/// Writes the abidw XML of `library` to `out`.
pub fn abidw(library: &Path, out: &Path) -> Result<(), String> {
    let mut args: Vec<&std::ffi::OsStr> = ABIDW_OPTIONS.iter().map(|s| s.as_ref()).collect();
    args.extend(["--out-file".as_ref(), out.as_os_str(), library.as_os_str()]);
    let o = run("abidw", &args)?;
    if !o.status.success() {
        return Err(format!("abidw {} failed: {}", library.display(), String::from_utf8_lossy(&o.stderr)));
    }
    let xml = std::fs::read_to_string(out).map_err(|e| format!("cannot read abidw output: {e}"))?;
    let xml = drop_empty_units(&xml);
    std::fs::write(out, &xml).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let problem = unusable(&xml, library);
    if problem.is_some() {
        let _ = std::fs::remove_file(out);
    }
    problem.map_or(Ok(()), Err)
}

/// Removes the translation units that declare nothing the ABI reaches: in
/// a Rust library most of them, named after codegen units whose names change
/// with every incremental build. They carry no information, only churn.
fn drop_empty_units(xml: &str) -> String {
    let mut out = String::with_capacity(xml.len());
    let mut lines = xml.lines().peekable();
    while let Some(line) = lines.next() {
        let opens_unit = line.trim_start().starts_with("<abi-instr ") && line.ends_with("'>");
        if opens_unit && lines.peek().is_some_and(|next| next.trim() == "</abi-instr>") {
            lines.next();
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Why an abidw record cannot serve as one, if it cannot.
fn unusable(xml: &str, library: &Path) -> Option<String> {
    // Without type info the exported functions appear with no parameters.
    let exported_decls = xml.split("<function-decl ").skip(1).filter(|d| d.contains("elf-symbol-id="));
    let typed =
        exported_decls.map(|d| d.split("</function-decl>").next().unwrap_or(d)).any(|d| d.contains("<parameter "));
    if !typed {
        return Some(format!(
            "{} has no type debug info, so abidw sees no signatures (a release build keeps only line \
             tables): pass --debug-library with a build that has full debug info, e.g. the dev profile's \
             `cargo build -p xdal` -> target/debug/libxdal.so",
            library.display()
        ));
    }
    if let Some(at) = xml.find("path='/") {
        let end = xml[at..].find('\n').map_or(xml.len(), |e| at + e);
        return Some(format!("abidw wrote an absolute path into the XML: {}", &xml[at..end]));
    }
    None
}

/// Suppressions for what the policy allows in a minor release: new
/// functions and variables (enumerators added are harmless to abidiff
/// already). Fields appended to extensible structs are not suppressed but
/// trimmed from the current record first (`trim_appended`): libabigail's
/// insertion-range suppressions also hide a change with no inserted member
/// at all, such as two fields swapped.
pub fn policy_suppressions() -> String {
    String::from(
        "# Made by xdal-abi: what docs/abi-policy.md allows within a major.\n\
         [suppress_function]\n  label = new functions are additions\n  change_kind = added-function\n\n\
         [suppress_variable]\n  label = new variables are additions\n  change_kind = added-variable\n",
    )
}

/// The current abidw record as a caller of the baseline `base` sees it:
/// in each of the baseline's extensible structs, the members at or past
/// the end of the baseline's last field (appended since, which such a caller neither passes
/// nor reads) are left out and the size is the baseline's. abidiff then
/// compares everything the baseline's callers do see, with no suppression
/// for structs at all: a member moved, retyped or inserted before the end
/// is its finding as much as the checker's.
pub fn trim_appended(xml: &str, base: &Description) -> String {
    // (where the baseline's last field ends, the baseline's size), in bits:
    // a member appended into the trailing padding is appended too.
    let bits_of = |line: &str| -> Option<(u64, u64)> {
        let name = attribute(line, "name")?;
        let name = name.rsplit("::").next().unwrap_or(name);
        let st = base.structs.iter().find(|s| s.extensible && s.name == name)?;
        let end = st.fields.iter().map(|f| f.offset + f.size).max().unwrap_or(st.size);
        Some((end * 8, st.size * 8))
    };
    let mut out = String::with_capacity(xml.len());
    let mut within: Option<(u64, u64)> = None;
    let mut skipping = false;
    for line in xml.lines() {
        let trimmed = line.trim_start();
        if skipping {
            skipping = !trimmed.starts_with("</data-member>");
            continue;
        }
        match within {
            None if trimmed.starts_with("<class-decl ") && !trimmed.ends_with("/>") => {
                within = bits_of(trimmed);
                if let (Some((_, bits)), Some(size)) = (within, attribute(trimmed, "size-in-bits")) {
                    if size.parse::<u64>().is_ok_and(|size| size > bits) {
                        out.push_str(&line.replacen(
                            &format!("size-in-bits='{size}'"),
                            &format!("size-in-bits='{bits}'"),
                            1,
                        ));
                        out.push('\n');
                        continue;
                    }
                }
            }
            Some(_) if trimmed.starts_with("</class-decl>") => within = None,
            Some((end, _)) if trimmed.starts_with("<data-member ") => {
                let offset = attribute(trimmed, "layout-offset-in-bits").and_then(|o| o.parse::<u64>().ok());
                if offset.is_some_and(|o| o >= end) {
                    skipping = !trimmed.ends_with("/>") && !trimmed.contains("</data-member>");
                    continue;
                }
            }
            _ => {}
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The value of `name='...'` in one XML start tag.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}='"))? + name.len() + 3;
    let len = tag[start..].find('\'')?;
    Some(&tag[start..start + len])
}

/// abidiff's verdict.
pub struct Verdict {
    pub status: i32,
    pub report: String,
}

impl Verdict {
    /// abidiff's status bits, in words.
    pub fn meaning(&self) -> String {
        let bits = [(1, "error"), (2, "usage error"), (4, "ABI change"), (8, "incompatible ABI change")];
        let words: Vec<&str> = bits.iter().filter(|(b, _)| self.status & b != 0).map(|(_, w)| *w).collect();
        if words.is_empty() {
            format!("status {}", self.status)
        } else {
            words.join(", ")
        }
    }
}

/// Runs abidiff between two XML records with the given suppression files.
pub fn abidiff(base_xml: &Path, cur_xml: &Path, suppressions: &[&Path]) -> Result<Verdict, String> {
    let mut args: Vec<&std::ffi::OsStr> = vec!["--no-show-locs".as_ref()];
    for s in suppressions {
        args.extend(["--suppr".as_ref(), s.as_os_str()]);
    }
    args.extend([base_xml.as_os_str(), cur_xml.as_os_str()]);
    let o = run("abidiff", &args)?;
    let status = o.status.code().ok_or("abidiff was killed")?;
    let mut report = String::from_utf8_lossy(&o.stdout).into_owned();
    report.push_str(&String::from_utf8_lossy(&o.stderr));
    Ok(Verdict { status, report })
}

#[cfg(test)]
mod tests {
    #[test]
    fn appended_members_of_extensible_structs_are_trimmed() {
        let base: crate::model::Description = serde_json::from_value(serde_json::json!({
            "format": crate::model::FORMAT, "soname": null, "headers": [], "symbols": [], "macros": [],
            "functions": [], "opaque_structs": [], "enums": [], "typedefs": [],
            "structs": [{"name": "xdal_p", "header": "x.h", "size": 16, "align": 8, "extensible": true,
                         "table": false, "fields": [
                             {"name": "a", "type": {"c": "uint64_t", "canonical": "uint64_t"}, "offset": 8, "size": 4}
                         ]}]
        }))
        .unwrap();
        let xml = "<x>\n  <class-decl name='xdal_p' size-in-bits='192' is-struct='yes'>\n\
                   <data-member access='public' layout-offset-in-bits='64'>\n    <var-decl name='a'/>\n  </data-member>\n\
                   <data-member access='public' layout-offset-in-bits='96'>\n    <var-decl name='b'/>\n  </data-member>\n\
                   </class-decl>\n  <class-decl name='other' size-in-bits='192'>\n\
                   <data-member access='public' layout-offset-in-bits='128'>\n  </data-member>\n</class-decl>\n</x>\n";
        let trimmed = super::trim_appended(xml, &base);
        assert!(trimmed.contains("<class-decl name='xdal_p' size-in-bits='128'"), "{trimmed}");
        assert!(trimmed.contains("name='a'") && !trimmed.contains("name='b'"), "{trimmed}");
        // Other structs keep every member and their size.
        assert!(trimmed.contains("<class-decl name='other' size-in-bits='192'>"), "{trimmed}");
        assert_eq!(trimmed.matches("layout-offset-in-bits='128'").count(), 1, "{trimmed}");
    }

    #[test]
    fn empty_units_are_dropped() {
        let xml = "<abi-corpus>\n  <abi-instr path='a'>\n  </abi-instr>\n  <abi-instr path='b'>\n    <x/>\n  </abi-instr>\n</abi-corpus>\n";
        assert_eq!(
            super::drop_empty_units(xml),
            "<abi-corpus>\n  <abi-instr path='b'>\n    <x/>\n  </abi-instr>\n</abi-corpus>\n"
        );
    }
}
