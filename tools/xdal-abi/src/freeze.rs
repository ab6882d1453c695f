//! `xdal-abi freeze`: records a build as the baseline of its ABI version.
use crate::abidiff;
use crate::baseline::{self, parse_version};
use crate::compare::{self, Kind};
use crate::describe::{describe, header_files};
use std::path::Path;

pub struct Options<'a> {
    pub version: &'a str,
    pub headers: &'a Path,
    pub library: &'a Path,
    pub debug_library: Option<&'a Path>,
    pub baselines: &'a Path,
    pub force: bool,
    pub abidiff: bool,
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn freeze(o: &Options) -> Result<(), String> {
    let version = parse_version(o.version).ok_or_else(|| format!("`{}` is not <major>.<minor>", o.version))?;
    let d = describe(o.headers, o.library)?;
    if d.abi_version() != Some(version) {
        return Err(format!(
            "the headers say ABI {:?}, not {}: set XDAL_ABI_VERSION_MAJOR/MINOR first",
            d.abi_version(),
            o.version
        ));
    }
    let own = compare::consistency(&d);
    if own.count(Kind::Break) > 0 {
        let problems: Vec<&str> = own.messages(Kind::Break).collect();
        return Err(format!("this build is inconsistent: {}", problems.join("; ")));
    }
    let dir = o.baselines.join(o.version);
    if dir.join(baseline::DESCRIPTION).exists() && !o.force {
        return Err(format!(
            "{} exists: a released baseline is frozen. Pass --force only to regenerate one not yet released",
            dir.display()
        ));
    }
    let headers_name = o
        .headers
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or_else(|| format!("cannot name the headers directory {}", o.headers.display()))?;
    let include = dir.join("include");
    if include.exists() {
        std::fs::remove_dir_all(&include).map_err(|e| format!("cannot clear {}: {e}", include.display()))?;
    }
    let target = include.join(&headers_name);
    std::fs::create_dir_all(&target).map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    for file in header_files(o.headers)? {
        std::fs::copy(o.headers.join(&file), target.join(&file)).map_err(|e| format!("cannot copy {file}: {e}"))?;
    }
    write(&dir.join(baseline::DESCRIPTION), &d.to_json())?;
    let xml = dir.join(baseline::ABIDW_XML);
    if o.abidiff {
        abidiff::abidw(o.debug_library.unwrap_or(o.library), &xml)?;
    } else if xml.exists() {
        std::fs::remove_file(&xml).map_err(|e| format!("cannot remove the stale {}: {e}", xml.display()))?;
    }
    let allow = dir.join(baseline::ALLOW_LIST);
    if !allow.exists() {
        write(&allow, baseline::ALLOW_LIST_TEMPLATE)?;
    }
    println!(
        "froze ABI {} in {}: {} symbols, {} structs, {} enums, {} macros{}",
        o.version,
        dir.display(),
        d.symbols.len(),
        d.structs.len(),
        d.enums.len(),
        d.macros.len(),
        if o.abidiff { ", abidw record" } else { " (no abidw record)" }
    );
    Ok(())
}
