//! What the headers do not carry, compared from the library's manifest:
//! the entries the front requires of a backend, the built-in kernel
//! catalogue, and the layouts the compiler gave the ABI types.
use super::Report;
use crate::manifest::{Layout, Manifest};
use crate::model::{BuiltinKernel, Description, Struct};
use std::collections::{BTreeSet, HashMap};

/// A backend built against `base` fills at least the entries `base`
/// required: the front may require fewer since, never another.
pub fn required_entries(base: &Description, label: &str, m: &Manifest, r: &mut Report) {
    let before: BTreeSet<String> = base.required_entries().into_iter().collect();
    for entry in &m.required_entries {
        if !before.contains(entry) {
            r.brk(format!(
                "the front now requires backend-table entry `{entry}`, which backends built against {label} need \
                 not fill: every one of them that leaves it NULL is refused at load (XDAL_ERROR_BACKEND_UNAVAILABLE); \
                 make it optional, with a fallback"
            ));
        }
    }
    let now: BTreeSet<&String> = m.required_entries.iter().collect();
    for entry in before.iter().filter(|e| !now.contains(e)) {
        r.add(format!("backend-table entry `{entry}` is no longer required of a backend"));
    }
}

/// Every built-in kernel of `base`, under the same name, with the same
/// argument sizes; new ones may be added.
pub fn builtins(base: &Description, label: &str, m: &Manifest, r: &mut Report) {
    let Some(recorded) = &base.builtins else { return };
    let before: Vec<BuiltinKernel> = match recorded.iter().map(|s| BuiltinKernel::parse(s).ok_or(s)).collect() {
        Ok(before) => before,
        Err(bad) => {
            r.brk(format!("baseline {label} records a built-in kernel as `{bad}`, not `name(size,..)`"));
            return;
        }
    };
    let now: HashMap<&str, &[u64]> = m.builtins.iter().map(|b| (b.name.as_str(), b.arg_sizes.as_slice())).collect();
    for kernel in &before {
        match now.get(kernel.name.as_str()) {
            None => r.brk(format!(
                "built-in kernel `{}` removed (or renamed): a program built against {label} gets \
                 XDAL_ERROR_NOT_FOUND from xdal_module_get_function",
                kernel.name
            )),
            Some(sizes) if *sizes != kernel.arg_sizes.as_slice() => r.brk(format!(
                "built-in kernel `{}` takes arguments of {:?} bytes, {label} of {:?}: a launch built against {label} \
                 gets XDAL_ERROR_INVALID_VALUE",
                kernel.name, sizes, kernel.arg_sizes
            )),
            Some(_) => {}
        }
    }
    let known: BTreeSet<&str> = before.iter().map(|b| b.name.as_str()).collect();
    let added: Vec<&str> = m.builtins.iter().map(|b| b.name.as_str()).filter(|n| !known.contains(n)).collect();
    if !added.is_empty() {
        let shown: Vec<&str> = added.iter().copied().take(4).collect();
        let more =
            if added.len() > shown.len() { format!(" and {} more", added.len() - shown.len()) } else { "".into() };
        r.add(format!("{} built-in kernel(s) added: {}{more}", added.len(), shown.join(", ")));
    }
}

/// The layouts the library was compiled with, against `base`'s. Where the
/// headers describe a type exactly as the library lays it out, the header
/// comparison has said everything already; where they do not (a layout
/// cbindgen cannot express, headers that do not compile), this names the
/// change, and the disagreement itself is a break.
pub fn layouts(base: &Description, cur: &Description, label: &str, m: &Manifest, r: &mut Report) {
    let headers_measured = cur.probe_failure.is_none();
    for b in &base.structs {
        let Some(lib) = m.layout(&b.name) else {
            r.brk(format!(
                "struct `{}`: the library's manifest has no layout of it (removed from the ABI types, or missing \
                 from xdal-abi-manifest's list)",
                b.name
            ));
            continue;
        };
        let header = cur.structs.iter().find(|s| s.name == b.name);
        if headers_measured && header.is_some_and(|h| same_layout(h, lib)) {
            continue;
        }
        if let (true, Some(h)) = (headers_measured, header) {
            r.brk(format!(
                "struct `{}`: the headers describe {} bytes aligned to {}, the library lays it out in {} bytes \
                 aligned to {}{}: consumers of the headers and the library disagree",
                b.name,
                h.size,
                h.align,
                lib.size,
                lib.align,
                if same_fields(h, lib) { "" } else { ", with other field offsets" }
            ));
        } else if headers_measured && cur.opaque_structs.contains(&b.name) {
            r.brk(format!(
                "struct `{}`: the headers no longer define it (cbindgen could not express its layout: {} bytes \
                 aligned to {} in the library)",
                b.name, lib.size, lib.align
            ));
        }
        changes(b, lib, label, r);
    }
}

/// `base`'s layout of a struct against the library's.
fn changes(b: &Struct, lib: &Layout, label: &str, r: &mut Report) {
    let name = &b.name;
    if lib.size != b.size && !(b.extensible && lib.size > b.size) {
        r.brk(format!(
            "struct `{name}` as the library lays it out: size changed from {} to {} bytes",
            b.size, lib.size
        ));
    }
    if lib.align != b.align {
        r.brk(format!(
            "struct `{name}` as the library lays it out: alignment changed from {} to {} bytes (every struct \
             holding it, and every array of it, moves for callers built against {label})",
            b.align, lib.align
        ));
    }
    for f in &b.fields {
        match lib.fields.iter().find(|l| l.name == f.name) {
            None => r.brk(format!(
                "struct `{name}` as the library lays it out: field `{}` is not in the library's manifest (gone, or \
                 missing from xdal-abi-manifest's list)",
                f.name
            )),
            Some(l) if (l.offset, l.size) != (f.offset, f.size) => r.brk(format!(
                "struct `{name}` as the library lays it out: field `{}` at offset {} ({} bytes), {label} at {} ({} \
                 bytes)",
                f.name, l.offset, l.size, f.offset, f.size
            )),
            Some(_) => {}
        }
    }
}

fn same_layout(h: &Struct, lib: &Layout) -> bool {
    h.size == lib.size && h.align == lib.align && same_fields(h, lib)
}

/// Every field the manifest lists sits where the headers put it (a field
/// new in the headers that the manifest's list does not name yet is
/// measured from the headers alone).
fn same_fields(h: &Struct, lib: &Layout) -> bool {
    lib.fields.iter().all(|l| h.fields.iter().any(|f| f.name == l.name && (f.offset, f.size) == (l.offset, l.size)))
}
