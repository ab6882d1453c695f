//! Compares the description of a build with a baseline's, by the rules of
//! docs/abi-policy.md: within a major, only additions. Each finding names
//! one change in words a maintainer can act on.
mod contract;
mod enums;
mod functions;
mod structs;

use crate::manifest::Manifest;
use crate::model::{Description, Type};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Breaks binaries or backends built against the baseline.
    Break,
    /// Compatible: allowed in a minor release.
    Addition,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: Kind,
    pub message: String,
}

#[derive(Default, Debug)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn brk(&mut self, message: impl Into<String>) {
        self.findings.push(Finding { kind: Kind::Break, message: message.into() });
    }
    pub fn add(&mut self, message: impl Into<String>) {
        self.findings.push(Finding { kind: Kind::Addition, message: message.into() });
    }
    pub fn count(&self, kind: Kind) -> usize {
        self.findings.iter().filter(|f| f.kind == kind).count()
    }
    pub fn messages(&self, kind: Kind) -> impl Iterator<Item = &str> {
        self.findings.iter().filter(move |f| f.kind == kind).map(|f| f.message.as_str())
    }
}

/// Everything that changed from `base` (the baseline called `label`) to
/// `cur`, and, given the library's manifest, in what the headers do not
/// carry. Headers the C compiler could not measure are compared by name
/// and type only; the manifest's layouts stand in for theirs.
pub fn compare(base: &Description, cur: &Description, label: &str, manifest: Option<&Manifest>) -> Report {
    let mut r = Report::default();
    functions::soname(base, cur, &mut r);
    functions::symbols(base, cur, label, &mut r);
    functions::functions(base, cur, &mut r);
    functions::typedefs(base, cur, &mut r);
    if cur.probe_failure.is_none() {
        structs::structs(base, cur, label, &mut r);
        enums::enums(base, cur, &mut r);
        enums::macros(base, cur, &mut r);
        versions(base, cur, label, &mut r);
    }
    if let Some(m) = manifest {
        contract::required_entries(base, label, m, &mut r);
        contract::builtins(base, label, m, &mut r);
        contract::layouts(base, cur, label, m, &mut r);
    }
    r
}

/// The version macros never go backwards.
fn versions(base: &Description, cur: &Description, label: &str, r: &mut Report) {
    match (base.abi_version(), cur.abi_version()) {
        (_, None) => r.brk("XDAL_ABI_VERSION_MAJOR/XDAL_ABI_VERSION_MINOR are missing from the headers"),
        (Some(b), Some(c)) if c < b => r.brk(format!(
            "ABI version went backwards: baseline {label} is ABI {}.{}, the headers say {}.{}",
            b.0, b.1, c.0, c.1
        )),
        _ => {}
    }
    match (base.library_version(), cur.library_version()) {
        (_, None) => r.brk("XDAL_VERSION_MAJOR/MINOR/PATCH are missing from the headers"),
        (Some(b), Some(c)) if c < b => r.brk(format!(
            "library version went backwards: baseline {label} is {}.{}.{}, the headers say {}.{}.{}",
            b.0, b.1, b.2, c.0, c.1, c.2
        )),
        _ => {}
    }
}

/// Checks a build against itself: the headers compile, SONAME, version
/// macros and the library's manifest agree.
pub fn consistency(cur: &Description, manifest: Option<&Manifest>) -> Report {
    let mut r = Report::default();
    if let Some(failure) = &cur.probe_failure {
        let first: Vec<&str> = failure.lines().filter(|l| l.contains("error")).take(3).collect();
        r.brk(format!(
            "the headers do not compile, so no consumer can build against them: {}",
            if first.is_empty() { failure.lines().next().unwrap_or_default().to_string() } else { first.join(" | ") }
        ));
    }
    let version = cur.abi_version().or(manifest.map(|m| m.abi_version));
    if let (Some(m), Some(headers)) = (manifest, cur.abi_version()) {
        if m.abi_version != headers {
            r.brk(format!(
                "the headers say ABI {}.{}, the library's manifest {}.{}",
                headers.0, headers.1, m.abi_version.0, m.abi_version.1
            ));
        }
    }
    let Some((major, _)) = version else {
        r.brk("XDAL_ABI_VERSION_MAJOR/XDAL_ABI_VERSION_MINOR are missing from the headers");
        return r;
    };
    match &cur.soname {
        None => r.brk("the library has no SONAME"),
        Some(soname) => {
            let soname_major = soname.rsplit_once(".so.").map(|(_, v)| v.split('.').next().unwrap_or_default());
            if soname_major != Some(major.to_string().as_str()) {
                r.brk(format!("SONAME `{soname}` does not carry the ABI major {major} (want `lib<name>.so.{major}`)"));
            }
        }
    }
    if let Some((lib_major, _, _)) = cur.library_version().filter(|_| cur.probe_failure.is_none()) {
        if lib_major != major {
            r.brk(format!("XDAL_VERSION_MAJOR is {lib_major} but XDAL_ABI_VERSION_MAJOR is {major}: they must agree"));
        }
    }
    r
}

/// How to show a type change: as spelled, unless only the canonical form
/// (a typedef underneath) changed.
pub(crate) fn show(base: &Type, cur: &Type) -> (String, String) {
    if base.c != cur.c {
        (base.c.clone(), cur.c.clone())
    } else {
        (base.canonical.clone(), cur.canonical.clone())
    }
}

#[cfg(test)]
mod tests;
