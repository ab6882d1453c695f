//! Enum values and macros (the version macros are checked in `versions`).
use super::Report;
use crate::model::Description;

pub fn enums(base: &Description, cur: &Description, r: &mut Report) {
    for b in &base.enums {
        let Some(c) = cur.enums.iter().find(|c| c.name == b.name) else {
            r.brk(format!("enum `{}` removed", b.name));
            continue;
        };
        if b.size != c.size {
            r.brk(format!("enum `{}` changed size from {} to {} bytes", b.name, b.size, c.size));
        }
        for v in &b.values {
            match c.values.iter().find(|w| w.name == v.name) {
                None => r.brk(format!(
                    "enum `{}`: value `{}` ({}) removed; a retired value stays declared and reserved",
                    b.name, v.name, v.value
                )),
                Some(w) if w.value != v.value => r.brk(format!(
                    "enum `{}`: `{}` renumbered from {} to {}; values never change",
                    b.name, v.name, v.value, w.value
                )),
                Some(_) => {}
            }
        }
        for w in &c.values {
            if b.values.iter().any(|v| v.name == w.name) {
                continue;
            }
            match b.values.iter().find(|v| v.value == w.value) {
                Some(v) if !c.values.iter().any(|x| x.name == v.name) => r.brk(format!(
                    "enum `{}`: new value `{}` reuses {} of the retired `{}`",
                    b.name, w.name, w.value, v.name
                )),
                _ => r.add(format!("enum `{}`: new value `{}` = {}", b.name, w.name, w.value)),
            }
        }
    }
    for c in &cur.enums {
        if !base.enums.iter().any(|b| b.name == c.name) {
            r.add(format!("new enum `{}`", c.name));
        }
    }
}

fn is_version_macro(name: &str) -> bool {
    name.starts_with("XDAL_VERSION_") || name.starts_with("XDAL_ABI_VERSION_")
}

pub fn macros(base: &Description, cur: &Description, r: &mut Report) {
    for b in base.macros.iter().filter(|m| !is_version_macro(&m.name)) {
        let Some(c) = cur.macros.iter().find(|c| c.name == b.name) else {
            r.brk(format!("macro `{}` removed", b.name));
            continue;
        };
        match (b.int, c.int) {
            (Some(x), Some(y)) if x != y => {
                // A mask of every accepted flag grows as flags are added.
                if b.name.ends_with("_ALL") && y & x == x {
                    r.add(format!("flag mask `{}` grew from {x:#x} to {y:#x}", b.name));
                } else {
                    r.brk(format!("macro `{}` changed value from {x} to {y}", b.name));
                }
            }
            (Some(_), Some(_)) => {}
            _ if b.value != c.value => r.brk(format!("macro `{}` changed from `{}` to `{}`", b.name, b.value, c.value)),
            _ => {}
        }
    }
    for c in &cur.macros {
        if !base.macros.iter().any(|b| b.name == c.name) {
            r.add(format!("new macro `{}` = {}", c.name, c.value));
        }
    }
}
