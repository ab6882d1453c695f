//! A baseline: the frozen record of a released ABI version, in
//! `<baselines>/<major>.<minor>/`:
//!
//! - `include/<dir>/*.h`: the headers as released;
//! - `abi.json`: the description (`xdal-abi dump`);
//! - `abidw.xml`: libabigail's record of the library built with debug info;
//! - `abidiff.suppr`: the allow-list, libabigail suppressions for abidiff
//!   reports reviewed and found harmless (each with a reason).
use crate::model::Description;
use std::path::{Path, PathBuf};

pub const DESCRIPTION: &str = "abi.json";
pub const ABIDW_XML: &str = "abidw.xml";
pub const ALLOW_LIST: &str = "abidiff.suppr";

pub struct Baseline {
    /// `<major>.<minor>`, the directory name.
    pub label: String,
    pub version: (i64, i64),
    pub dir: PathBuf,
    pub description: Description,
}

/// `1.0` -> (1, 0).
pub fn parse_version(text: &str) -> Option<(i64, i64)> {
    let (major, minor) = text.split_once('.')?;
    let num = |s: &str| s.parse::<i64>().ok().filter(|_| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    Some((num(major)?, num(minor)?))
}

/// Every baseline under `root`, oldest first.
pub fn load_all(root: &Path) -> Result<Vec<Baseline>, String> {
    let entries = std::fs::read_dir(root).map_err(|e| format!("cannot read baselines {}: {e}", root.display()))?;
    let mut out = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let label = entry.file_name().to_string_lossy().into_owned();
        let Some(version) = parse_version(&label) else { continue };
        let dir = entry.path();
        let path = dir.join(DESCRIPTION);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let description = Description::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if description.abi_version() != Some(version) {
            return Err(format!(
                "{}: the baseline in directory {label} describes ABI {:?}",
                path.display(),
                description.abi_version()
            ));
        }
        out.push(Baseline { label, version, dir, description });
    }
    out.sort_by_key(|b| b.version);
    Ok(out)
}

/// The allow-list a new baseline starts with.
pub const ALLOW_LIST_TEMPLATE: &str = "\
# abidiff allow-list for this baseline: libabigail suppression specifications
# (https://sourceware.org/libabigail/manual/libabigail-concepts.html#suppression-specifications).
# `xdal-abi check` fails on any abidiff report that is not suppressed here or
# by the policy suppressions it derives itself (new functions and variables,
# fields appended to extensible structs). Add an entry only for a report that
# was reviewed and found harmless, with a label that says why, e.g.:
#
# [suppress_type]
#   label = <why this change cannot affect a consumer or a backend>
#   name_regexp = ^(.*::)?xdal_some_type$
";
