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
/// functions and variables, and fields appended to the baseline's
/// extensible structs (enumerators added are harmless to abidiff already).
pub fn policy_suppressions(base: &Description) -> String {
    let mut s = String::from(
        "# Made by xdal-abi from the baseline's description: what docs/abi-policy.md\n\
         # allows within a major.\n\
         [suppress_function]\n  label = new functions are additions\n  change_kind = added-function\n\n\
         [suppress_variable]\n  label = new variables are additions\n  change_kind = added-variable\n",
    );
    let extensible: Vec<&str> = base.structs.iter().filter(|s| s.extensible).map(|s| s.name.as_str()).collect();
    if !extensible.is_empty() {
        // Rust's DWARF qualifies names with their module path.
        s.push_str(&format!(
            "\n[suppress_type]\n  label = extensible structs grow at the end (struct_size)\n  type_kind = struct\n  \
             name_regexp = ^(.*::)?({})$\n  has_data_member_inserted_at = end\n",
            extensible.join("|")
        ));
    }
    s
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
    fn empty_units_are_dropped() {
        let xml = "<abi-corpus>\n  <abi-instr path='a'>\n  </abi-instr>\n  <abi-instr path='b'>\n    <x/>\n  </abi-instr>\n</abi-corpus>\n";
        assert_eq!(
            super::drop_empty_units(xml),
            "<abi-corpus>\n  <abi-instr path='b'>\n    <x/>\n  </abi-instr>\n</abi-corpus>\n"
        );
    }
}
