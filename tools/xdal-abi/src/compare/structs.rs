//! Struct layouts, and the backend table's entries and their requirements.
use super::{show, Report};
use crate::model::{Description, Field, Requirement, Struct};
use std::collections::HashMap;

pub fn structs(base: &Description, cur: &Description, label: &str, r: &mut Report) {
    for b in &base.structs {
        match cur.structs.iter().find(|c| c.name == b.name) {
            Some(c) => layout(b, c, label, r),
            None if cur.opaque_structs.contains(&b.name) => {
                r.brk(format!("struct `{}` became opaque: its layout is no longer in the headers", b.name))
            }
            None => r.brk(format!("struct `{}` removed", b.name)),
        }
    }
    for c in &cur.structs {
        if !base.structs.iter().any(|b| b.name == c.name) {
            r.add(format!("new struct `{}` ({} bytes)", c.name, c.size));
        }
    }
    for o in &base.opaque_structs {
        let still = cur.opaque_structs.contains(o) || cur.structs.iter().any(|c| &c.name == o);
        if !still {
            r.brk(format!("opaque struct `{o}` removed"));
        }
    }
}

/// Words for messages: a backend table has entries, a struct fields.
struct Words {
    what: String,
    item: &'static str,
}

fn layout(b: &Struct, c: &Struct, label: &str, r: &mut Report) {
    let w = if b.table {
        Words { what: format!("backend table `{}`", b.name), item: "entry" }
    } else {
        Words { what: format!("struct `{}`", b.name), item: "field" }
    };
    if b.align != c.align {
        r.brk(format!("{}: alignment changed from {} to {}", w.what, b.align, c.align));
    }
    let base_names: HashMap<&str, usize> = b.fields.iter().enumerate().map(|(i, f)| (f.name.as_str(), i)).collect();
    let cur_index: HashMap<&str, usize> = c.fields.iter().enumerate().map(|(i, f)| (f.name.as_str(), i)).collect();
    // The last position in the current struct that a baseline field holds:
    // new fields before it are insertions, after it appends.
    let last_kept = b.fields.iter().filter_map(|f| cur_index.get(f.name.as_str()).copied()).max();

    for (j, f) in c.fields.iter().enumerate() {
        let inside = last_kept.is_some_and(|k| j < k);
        if base_names.contains_key(f.name.as_str()) || !inside {
            continue;
        }
        let before = c.fields[j + 1..].iter().find(|g| base_names.contains_key(g.name.as_str()));
        let before = before.map(|g| format!(" (before `{}`)", g.name)).unwrap_or_default();
        r.brk(format!(
            "{}: {} `{}` inserted in the middle{before}; only appending at the end is compatible",
            w.what, w.item, f.name
        ));
    }
    let mut moves = Vec::new();
    for (i, f) in b.fields.iter().enumerate() {
        match cur_index.get(f.name.as_str()) {
            Some(&j) => {
                let g = &c.fields[j];
                if i != j || f.offset != g.offset {
                    moves.push(Move { name: &f.name, from: (i, f.offset), to: (j, g.offset) });
                }
                field(&w, b, f, g, r);
            }
            None => match c.fields.get(i).filter(|g| !base_names.contains_key(g.name.as_str())) {
                Some(g) if g.ty.canonical == f.ty.canonical && g.offset == f.offset => {
                    r.brk(format!("{}: {} `{}` renamed to `{}`", w.what, w.item, f.name, g.name))
                }
                _ => r.brk(format!("{}: {} `{}` removed", w.what, w.item, f.name)),
            },
        }
    }
    report_moves(&w, b.table, &moves, r);
    let appended = c
        .fields
        .iter()
        .enumerate()
        .filter(|(j, f)| !base_names.contains_key(f.name.as_str()) && last_kept.is_some_and(|k| *j > k));
    for (_, f) in appended {
        appended_field(&w, b, f, label, r);
    }
    if c.size < b.size {
        r.brk(format!("{}: size shrank from {} to {} bytes", w.what, b.size, c.size));
    } else if c.size > b.size && !b.extensible {
        r.brk(format!(
            "{}: size grew from {} to {} bytes, but it is not extensible (no leading `size_t struct_size`), \
             so callers built against {label} pass a smaller object",
            w.what, b.size, c.size
        ));
    }
}

/// A field at another index or offset than in the baseline.
struct Move<'a> {
    name: &'a str,
    /// (index, offset)
    from: (usize, u64),
    to: (usize, u64),
}

impl Move<'_> {
    fn shift(&self) -> (i128, i128) {
        (self.to.0 as i128 - self.from.0 as i128, i128::from(self.to.1) - i128::from(self.from.1))
    }
}

/// One line per run of consecutive fields shifted alike (what an insertion
/// or a removal does to everything after it), one per field otherwise.
fn report_moves(w: &Words, table: bool, moves: &[Move], r: &mut Report) {
    let mut start = 0;
    while start < moves.len() {
        let first = &moves[start];
        let mut end = start + 1;
        while end < moves.len() && moves[end].shift() == first.shift() && moves[end].from.0 == moves[end - 1].from.0 + 1
        {
            end += 1;
        }
        let index = if table { format!(", index {} to {}", first.from.0, first.to.0) } else { String::new() };
        let what = format!("{} `{}` moved from offset {} to {}{index}", w.item, first.name, first.from.1, first.to.1);
        match end - start {
            1 => r.brk(format!("{}: {what}", w.what)),
            n => r.brk(format!("{}: {what}; so did the {} after it, through `{}`", w.what, n - 1, moves[end - 1].name)),
        }
        start = end;
    }
}

fn field(w: &Words, b: &Struct, f: &Field, g: &Field, r: &mut Report) {
    if f.ty.canonical != g.ty.canonical {
        let (a, c) = show(&f.ty, &g.ty);
        r.brk(format!("{}: {} `{}` changed type from `{a}` to `{c}`", w.what, w.item, f.name));
    } else if f.size != g.size {
        r.brk(format!("{}: {} `{}` changed size from {} to {} bytes", w.what, w.item, f.name, f.size, g.size));
    }
    if b.table && tightened(&f.requirement, &g.requirement) {
        r.brk(format!(
            "{}: existing entry `{}` became {} (was {}): backends built before may leave it NULL",
            w.what,
            f.name,
            describe(&g.requirement),
            describe(&f.requirement)
        ));
    }
}

fn appended_field(w: &Words, b: &Struct, f: &Field, label: &str, r: &mut Report) {
    if !b.extensible {
        r.brk(format!(
            "{}: {} `{}` appended, but the struct is not extensible (no leading `size_t struct_size`)",
            w.what, w.item, f.name
        ));
        return;
    }
    match &f.requirement {
        Requirement::Required if b.table => r.brk(format!(
            "{}: new entry `{}` is Required, but backends built against {label} do not fill it \
             (their table ends before it); make it optional with a fallback",
            w.what, f.name
        )),
        Requirement::RequiredWhen(names) if b.table && names.iter().any(|n| b.fields.iter().any(|f| &f.name == n)) => r
            .brk(format!(
                "{}: new entry `{}` is {}, but backends built against {label} may fill that without it",
                w.what,
                f.name,
                describe(&f.requirement)
            )),
        _ => r.add(format!("{}: {} `{}` appended at offset {}", w.what, w.item, f.name, f.offset)),
    }
}

/// Whether `cur` asks more of a backend than `base` did.
fn tightened(base: &Requirement, cur: &Requirement) -> bool {
    match (base, cur) {
        (Requirement::RequiredWhen(a), Requirement::RequiredWhen(b)) => b.iter().any(|n| !a.contains(n)),
        _ => cur.rank() > base.rank(),
    }
}

fn describe(req: &Requirement) -> String {
    match req {
        Requirement::Optional => "optional".into(),
        Requirement::Required => "Required".into(),
        Requirement::RequiredWhen(names) => {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("Required when {} is set", names.join(" or "))
        }
    }
}
