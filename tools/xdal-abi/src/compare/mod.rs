//! Compares the description of a build with a baseline's, by the rules of
//! docs/abi-policy.md: within a major, only additions. Each finding names
//! one change in words a maintainer can act on.
mod enums;
mod functions;
mod structs;

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
/// `cur`.
pub fn compare(base: &Description, cur: &Description, label: &str) -> Report {
    let mut r = Report::default();
    functions::soname(base, cur, &mut r);
    functions::symbols(base, cur, label, &mut r);
    functions::functions(base, cur, &mut r);
    functions::typedefs(base, cur, &mut r);
    structs::structs(base, cur, label, &mut r);
    enums::enums(base, cur, &mut r);
    enums::macros(base, cur, &mut r);
    versions(base, cur, label, &mut r);
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

/// Checks a build against itself: SONAME and version macros agree.
pub fn consistency(cur: &Description) -> Report {
    let mut r = Report::default();
    let Some((major, _)) = cur.abi_version() else {
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
    if let Some((lib_major, _, _)) = cur.library_version() {
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
