//! The library's name and symbols, the prototypes and the typedefs.
use super::{show, Report};
use crate::model::{Description, Function};

pub fn soname(base: &Description, cur: &Description, r: &mut Report) {
    if base.soname != cur.soname {
        let name = |s: &Option<String>| s.clone().unwrap_or_else(|| "(none)".into());
        r.brk(format!(
            "SONAME changed from `{}` to `{}`: programs linked against the baseline look for the old name",
            name(&base.soname),
            name(&cur.soname)
        ));
    }
}

fn same_signature(a: &Function, b: &Function) -> bool {
    a.returns.canonical == b.returns.canonical
        && a.variadic == b.variadic
        && a.params.len() == b.params.len()
        && a.params.iter().zip(&b.params).all(|(x, y)| x.ty.canonical == y.ty.canonical)
}

pub fn symbols(base: &Description, cur: &Description, label: &str, r: &mut Report) {
    for s in &base.symbols {
        if cur.symbols.binary_search(s).is_ok() {
            continue;
        }
        // A new function with the same signature is probably the old one renamed.
        let old = base.functions.iter().find(|f| &f.name == s);
        let renamed = old.and_then(|old| {
            cur.functions
                .iter()
                .find(|f| f.exported && base.symbols.binary_search(&f.name).is_err() && same_signature(old, f))
        });
        let hint = renamed.map(|f| format!(" (renamed to `{}`?)", f.name)).unwrap_or_default();
        r.brk(format!(
            "symbol `{s}` removed from the library{hint}: programs built against {label} that call it no longer load"
        ));
    }
    for s in &cur.symbols {
        if base.symbols.binary_search(s).is_err() {
            r.add(format!("new symbol `{s}`"));
        }
    }
}

pub fn functions(base: &Description, cur: &Description, r: &mut Report) {
    for f in &base.functions {
        let Some(g) = cur.functions.iter().find(|g| g.name == f.name) else {
            // An exported function that is gone is already named by `symbols`.
            if !f.exported || cur.symbols.binary_search(&f.name).is_ok() {
                r.brk(format!("function `{}` is no longer declared in {}", f.name, f.header));
            }
            continue;
        };
        if f.returns.canonical != g.returns.canonical {
            let (a, b) = show(&f.returns, &g.returns);
            r.brk(format!("return type of `{}` changed from `{a}` to `{b}`", f.name));
        }
        if f.params.len() != g.params.len() || f.variadic != g.variadic {
            r.brk(format!("`{}` changed its parameter list: was `{}`, now `{}`", f.name, f.prototype, g.prototype));
            continue;
        }
        for (i, (p, q)) in f.params.iter().zip(&g.params).enumerate() {
            if p.ty.canonical != q.ty.canonical {
                let (a, b) = show(&p.ty, &q.ty);
                r.brk(format!("parameter {} (`{}`) of `{}` changed type from `{a}` to `{b}`", i + 1, p.name, f.name));
            }
        }
    }
    for g in &cur.functions {
        if !base.functions.iter().any(|f| f.name == g.name) {
            r.add(format!("new function `{}`", g.prototype));
        }
    }
}

pub fn typedefs(base: &Description, cur: &Description, r: &mut Report) {
    for t in &base.typedefs {
        match cur.typedefs.iter().find(|u| u.name == t.name) {
            None => r.brk(format!("typedef `{}` removed", t.name)),
            Some(u) if u.ty.canonical != t.ty.canonical => {
                let (a, b) = show(&t.ty, &u.ty);
                r.brk(format!("typedef `{}` changed from `{a}` to `{b}`", t.name));
            }
            Some(_) => {}
        }
    }
    for u in &cur.typedefs {
        if !base.typedefs.iter().any(|t| t.name == u.name) {
            r.add(format!("new typedef `{}` = `{}`", u.name, u.ty.c));
        }
    }
}
