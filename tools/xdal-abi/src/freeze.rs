//! `xdal-abi freeze`: records a build as the baseline of its ABI version.
use crate::abidiff;
use crate::baseline::{self, parse_version};
use crate::compare::{self, Kind};
use crate::describe::{describe, header_files};
use crate::manifest::Manifest;
use std::path::Path;

pub struct Options<'a> {
    pub version: &'a str,
    pub headers: &'a Path,
    pub library: &'a Path,
    pub debug_library: Option<&'a Path>,
    /// The library's manifest: its required entries and built-in catalogue
    /// are recorded, its layouts must be the headers'.
    pub manifest: Option<&'a Manifest>,
    pub baselines: &'a Path,
    pub force: bool,
    pub abidiff: bool,
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn freeze(o: &Options) -> Result<(), String> {
    let version = parse_version(o.version).ok_or_else(|| format!("`{}` is not <major>.<minor>", o.version))?;
    let mut d = describe(o.headers, o.library)?;
    if let Some(failure) = &d.probe_failure {
        return Err(format!("cannot freeze headers that do not compile: {failure}"));
    }
    if d.abi_version() != Some(version) {
        return Err(format!(
            "the headers say ABI {:?}, not {}: set XDAL_ABI_VERSION_MAJOR/MINOR first",
            d.abi_version(),
            o.version
        ));
    }
    let mut own = compare::consistency(&d, o.manifest);
    if let Some(m) = o.manifest {
        // The headers must describe the library as it is compiled: the
        // baseline's layouts are then the library's too.
        own.findings.extend(compare::compare(&d, &d, o.version, Some(m)).findings);
        m.record_in(&mut d);
    }
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
    match &d.builtins {
        Some(builtins) => println!(
            "  with the library's manifest: {} required backend-table entries, {} built-in kernels",
            d.required_entries.as_ref().map_or(0, Vec::len),
            builtins.len()
        ),
        None => println!("  no --manifest: required entries and built-in kernels not recorded"),
    }
    Ok(())
}
