//! `xdal-abi check`: the current build against every baseline of its ABI
//! major, by the checker's own rules and by abidiff.
use crate::abidiff;
use crate::baseline::{self, Baseline};
use crate::compare::{self, Kind, Report};
use crate::manifest::Manifest;
use crate::model::Description;
use crate::scratch::Scratch;
use std::path::{Path, PathBuf};

pub struct Options<'a> {
    pub headers: &'a Path,
    pub library: &'a Path,
    /// The library with full debug info, for abidw (default: `library`).
    pub debug_library: Option<&'a Path>,
    /// The library's own manifest (`xdal-abi-manifest`).
    pub manifest: Option<&'a Manifest>,
    pub baselines: &'a Path,
    pub abidiff: bool,
}

fn print(report: &Report) {
    for f in &report.findings {
        let tag = match f.kind {
            Kind::Break => "BREAK",
            Kind::Addition => "added",
        };
        println!("  {tag}  {}", f.message);
    }
}

/// The abidw record of the current build, made once for all baselines.
struct CurrentXml<'a> {
    library: &'a Path,
    scratch: Scratch,
    made: Option<PathBuf>,
}

impl CurrentXml<'_> {
    fn path(&mut self) -> Result<&Path, String> {
        if self.made.is_none() {
            let out = self.scratch.path().join("current.abidw.xml");
            abidiff::abidw(self.library, &out)?;
            self.made = Some(out);
        }
        Ok(self.made.as_deref().expect("made above"))
    }
}

/// Runs abidiff against one baseline; true when nothing unallowed remains.
fn abidiff_against(b: &Baseline, current: &mut CurrentXml) -> Result<bool, String> {
    let base_xml = b.dir.join(baseline::ABIDW_XML);
    if !base_xml.exists() {
        return Err(format!(
            "{} is missing: refreeze the baseline with abidw, or pass --no-abidiff",
            base_xml.display()
        ));
    }
    let policy = current.scratch.path().join(format!("policy-{}.suppr", b.label));
    std::fs::write(&policy, abidiff::policy_suppressions())
        .map_err(|e| format!("cannot write {}: {e}", policy.display()))?;
    let allow = b.dir.join(baseline::ALLOW_LIST);
    let mut suppressions = vec![policy.as_path()];
    if allow.exists() {
        suppressions.push(&allow);
    }
    let full = std::fs::read_to_string(current.path()?).map_err(|e| format!("cannot read the abidw record: {e}"))?;
    let cur_xml = current.scratch.path().join(format!("current-as-{}.abidw.xml", b.label));
    std::fs::write(&cur_xml, abidiff::trim_appended(&full, &b.description))
        .map_err(|e| format!("cannot write {}: {e}", cur_xml.display()))?;
    let verdict = abidiff::abidiff(&base_xml, &cur_xml, &suppressions)?;
    if verdict.status == 0 {
        println!("  abidiff: no change outside the policy and {}", allow.display());
        return Ok(true);
    }
    println!(
        "  BREAK  abidiff reports {} (status {}) not covered by the allow-list {}:",
        verdict.meaning(),
        verdict.status,
        allow.display()
    );
    for line in verdict.report.lines() {
        println!("         | {line}");
    }
    Ok(false)
}

/// An ABI major with no baseline of its own: compared with the last
/// baseline of the major before it, so that a mistaken bump cannot hide
/// breaks. Always a failure: the breaks are listed as what the new major
/// would announce, which demands a new SONAME, and a new major is released
/// by freezing its first baseline (with the SONAME change), not by raising
/// the macro.
fn new_major(previous: &Baseline, cur: &Description, manifest: Option<&Manifest>, major: i64) {
    println!(
        "== ABI major {major} has no baseline: against {}, the last baseline of major {} ({})",
        previous.label,
        previous.version.0,
        previous.dir.display()
    );
    let report = compare::compare(&previous.description, cur, &previous.label, manifest);
    let breaks: Vec<&str> = report.messages(Kind::Break).collect();
    for message in &breaks {
        println!("  BREAK  (major) {message}");
    }
    if cur.soname.is_some() && cur.soname == previous.description.soname {
        println!(
            "  BREAK  ABI major {major} keeps the SONAME `{}` of {}: a new major demands a new SONAME",
            cur.soname.as_deref().unwrap_or_default(),
            previous.label
        );
    }
    if breaks.is_empty() {
        println!(
            "  BREAK  ABI major raised to {major} with no break against {}: a mistaken bump; stay on major {} \
             and release a minor",
            previous.label, previous.version.0
        );
    } else {
        println!(
            "  BREAK  ABI major raised to {major}: the {} break(s) above against {} are what it announces; \
             a new major is released with a new SONAME (`lib<name>.so.{major}`) and its first baseline \
             frozen (tools/xdal-abi/freeze.sh {major}.0), see docs/abi-policy.md",
            breaks.len(),
            previous.label
        );
    }
}

/// Returns whether the build passes.
pub fn check(o: &Options) -> Result<bool, String> {
    let cur: Description = crate::describe::describe(o.headers, o.library)?;
    // Headers that do not compile carry no macro values: the library's
    // manifest says which ABI it is.
    let Some((major, minor)) = cur.abi_version().or(o.manifest.map(|m| m.abi_version)) else {
        return Err("the headers define no XDAL_ABI_VERSION_MAJOR/XDAL_ABI_VERSION_MINOR".into());
    };
    let soname = cur.soname.clone().unwrap_or_else(|| "no SONAME".into());
    println!(
        "xdal-abi check: {} ({soname}), headers {}: ABI {major}.{minor}",
        o.library.display(),
        o.headers.display()
    );
    let mut failed = false;
    let own = compare::consistency(&cur, o.manifest);
    print(&own);
    failed |= own.count(Kind::Break) > 0;

    let all = baseline::load_all(o.baselines)?;
    for b in all.iter().filter(|b| b.version.0 > major) {
        println!("  BREAK  ABI major went backwards: baseline {} exists, the headers say {major}.{minor}", b.label);
        failed = true;
    }
    let same: Vec<&Baseline> = all.iter().filter(|b| b.version.0 == major).collect();
    let mut current =
        CurrentXml { library: o.debug_library.unwrap_or(o.library), scratch: Scratch::new("check")?, made: None };
    let mut results = Vec::new();
    if same.is_empty() {
        match all.iter().rfind(|b| b.version.0 < major) {
            Some(previous) => {
                new_major(previous, &cur, o.manifest, major);
                failed = true;
                results.push(format!("major {major} without a baseline, against {} FAILED", previous.label));
            }
            None => println!(
                "  note   no baseline of ABI major {major} or before it in {}: nothing to compare against",
                o.baselines.display()
            ),
        }
    }
    for b in same {
        println!("== against baseline {} ({})", b.label, b.dir.display());
        let mut report = compare::compare(&b.description, &cur, &b.label, o.manifest);
        crate::struct_size::check(b, &cur, o.library, &mut report)?;
        print(&report);
        let breaks = report.count(Kind::Break);
        let abidiff_ok = !o.abidiff || abidiff_against(b, &mut current)?;
        if breaks > 0 {
            println!(
                "  {breaks} ABI break(s) within major {major}: revert them, or make them in a new major \
                 (XDAL_ABI_VERSION_MAJOR and the SONAME), see docs/abi-policy.md"
            );
        } else if report.count(Kind::Addition) > 0 && (major, minor) == b.version {
            println!(
                "  note   additions since {} while XDAL_ABI_VERSION_MINOR is still {minor}: bump it, and \
                 freeze the new baseline, when releasing",
                b.label
            );
        }
        let ok = breaks == 0 && abidiff_ok;
        failed |= !ok;
        results.push(format!("{} {}", b.label, if ok { "ok" } else { "FAILED" }));
    }
    if !o.abidiff {
        println!("  note   abidiff skipped (--no-abidiff)");
    }
    if o.manifest.is_none() {
        println!(
            "  note   no --manifest: the entries the front requires, the built-in kernel catalogue and the \
             library's compiled layouts were not checked"
        );
    }
    let verdict = if failed { "FAILED" } else { "passed" };
    println!(
        "xdal-abi check {verdict}: {}",
        if results.is_empty() { "no baseline".into() } else { results.join(", ") }
    );
    Ok(!failed)
}
