//! Builds the description of a build from its artefacts: the headers
//! (parsed), the layouts (the C compiler's probe) and the library (ELF).
use crate::ctype::CType;
use crate::header::{self, Header, Item};
use crate::model::*;
use crate::probe::{self, Request};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// The header files of a directory, sorted by name.
pub fn header_files(dir: &Path) -> Result<Vec<String>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read headers directory {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".h"))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("no .h files in {}", dir.display()));
    }
    Ok(names)
}

/// Describes the headers in `dir` and the library at `library`.
pub fn describe(dir: &Path, library: &Path) -> Result<Description, String> {
    let exports = crate::elf::read(library)?;
    let mut d = describe_headers(dir)?;
    for f in &mut d.functions {
        f.exported = exports.symbols.binary_search(&f.name).is_ok();
    }
    d.soname = exports.soname;
    d.symbols = exports.symbols;
    Ok(d)
}

/// Describes the headers alone (no symbols, no SONAME).
pub fn describe_headers(dir: &Path) -> Result<Description, String> {
    let files = header_files(dir)?;
    let mut headers = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(dir.join(file)).map_err(|e| format!("cannot read {file}: {e}"))?;
        headers.push(header::parse(file, &text)?);
    }
    let typedefs = typedef_map(&headers);
    let ty = |t: &CType| Type { c: t.to_string(), canonical: t.canonical(&typedefs).to_string() };

    let mut d = Description {
        format: FORMAT.to_string(),
        soname: None,
        headers: files.clone(),
        symbols: Vec::new(),
        macros: Vec::new(),
        functions: Vec::new(),
        structs: Vec::new(),
        opaque_structs: Vec::new(),
        enums: Vec::new(),
        typedefs: Vec::new(),
        required_entries: None,
        builtins: None,
        probe_failure: None,
    };
    let mut request = Request::default();
    let mut defined_tags = BTreeSet::new();
    let mut declared_tags = BTreeSet::new();
    for h in &headers {
        for m in &h.defines {
            if probe::looks_integral(&m.value) {
                request.macros.push(m.name.clone());
            }
            d.macros.push(Macro { name: m.name.clone(), header: h.file.clone(), value: m.value.clone(), int: None });
        }
        for item in &h.items {
            match item {
                Item::Struct(s) => {
                    let (key, spelling) = spelling("struct", &s.tag, &s.alias)?;
                    defined_tags.insert(key.clone());
                    if let Some(alias) = &s.alias {
                        let target = CType::Named { name: spelling.clone(), konst: false };
                        if *alias != spelling {
                            d.typedefs.push(Typedef { name: alias.clone(), header: h.file.clone(), ty: ty(&target) });
                        }
                    }
                    let extensible = s
                        .fields
                        .first()
                        .is_some_and(|f| f.name == "struct_size" && f.ty.canonical(&typedefs).to_string() == "size_t");
                    let table = extensible && s.fields.iter().any(|f| f.ty.is_function_pointer());
                    let fields = s
                        .fields
                        .iter()
                        .map(|f| Field {
                            name: f.name.clone(),
                            ty: ty(&f.ty),
                            offset: 0,
                            size: 0,
                            requirement: if table { Requirement::from_doc(&f.doc) } else { Requirement::Optional },
                        })
                        .collect();
                    let names = s.fields.iter().map(|f| f.name.clone()).collect();
                    request.structs.push((key.clone(), spelling, names));
                    d.structs.push(Struct {
                        name: key,
                        header: h.file.clone(),
                        size: 0,
                        align: 0,
                        extensible,
                        table,
                        fields,
                    });
                }
                Item::Enum(e) => {
                    let (key, spelling) = spelling("enum", &e.tag, &e.alias)?;
                    if let Some(alias) = &e.alias {
                        if *alias != spelling {
                            let target = CType::Named { name: spelling.clone(), konst: false };
                            d.typedefs.push(Typedef { name: alias.clone(), header: h.file.clone(), ty: ty(&target) });
                        }
                    }
                    let names: Vec<String> = e.values.iter().map(|(n, _)| n.clone()).collect();
                    request.enums.push((key.clone(), spelling, names.clone()));
                    let values = names.into_iter().map(|name| Enumerator { name, value: 0 }).collect();
                    d.enums.push(Enum { name: key, header: h.file.clone(), size: 0, values });
                }
                Item::Typedef { name, ty: t } => {
                    if let CType::Named { name: target, .. } = t {
                        if let Some(tag) = target.strip_prefix("struct ") {
                            declared_tags.insert(tag.to_string());
                        }
                    }
                    d.typedefs.push(Typedef { name: name.clone(), header: h.file.clone(), ty: ty(t) });
                }
                Item::Tag(tag) => {
                    declared_tags.insert(tag.clone());
                }
                Item::Function { name, ty: t, param_names } => d.functions.push(function(h, name, t, param_names, &ty)),
            }
        }
    }
    d.opaque_structs = declared_tags.difference(&defined_tags).cloned().collect();

    // Headers the C compiler cannot measure are a finding, not an error of
    // this tool: the caller names them as a break.
    let layouts = match probe::measure(dir, &files, &request)? {
        Ok(layouts) => layouts,
        Err(failure) => {
            d.probe_failure = Some(failure);
            return Ok(d);
        }
    };
    for m in &mut d.macros {
        m.int = layouts.macros.get(&m.name).copied();
    }
    for s in &mut d.structs {
        let layout = layouts.structs.get(&s.name).ok_or("probe lost a struct")?;
        (s.size, s.align) = (layout.size, layout.align);
        for (f, (offset, size)) in s.fields.iter_mut().zip(&layout.fields) {
            (f.offset, f.size) = (*offset, *size);
        }
    }
    for e in &mut d.enums {
        let (size, values) = layouts.enums.get(&e.name).ok_or("probe lost an enum")?;
        e.size = *size;
        for (v, value) in e.values.iter_mut().zip(values) {
            v.value = *value;
        }
    }
    Ok(d)
}

/// The key (tag, else typedef name) and C spelling of a struct or enum.
fn spelling(kind: &str, tag: &Option<String>, alias: &Option<String>) -> Result<(String, String), String> {
    match (tag, alias) {
        (Some(tag), _) => Ok((tag.clone(), format!("{kind} {tag}"))),
        (None, Some(alias)) => Ok((alias.clone(), alias.clone())),
        (None, None) => Err(format!("an anonymous {kind} without a typedef")),
    }
}

fn function(
    h: &Header,
    name: &str,
    t: &CType,
    param_names: &[Option<String>],
    ty: &dyn Fn(&CType) -> Type,
) -> Function {
    let CType::Function { ret, params, variadic } = t else { unreachable!("only function items are passed") };
    let params: Vec<Param> = params
        .iter()
        .enumerate()
        .map(|(i, p)| Param {
            name: param_names.get(i).cloned().flatten().unwrap_or_else(|| format!("arg{i}")),
            ty: ty(p),
        })
        .collect();
    let mut list: Vec<String> = params.iter().map(|p| format!("{} {}", p.ty.c, p.name)).collect();
    if *variadic {
        list.push("...".into());
    }
    let list = if list.is_empty() { "void".to_string() } else { list.join(", ") };
    Function {
        name: name.to_string(),
        header: h.file.clone(),
        exported: false,
        prototype: format!("{} {name}({list})", ret),
        returns: ty(ret),
        params,
        variadic: *variadic,
    }
}

/// Every typedef of every header, including `typedef struct X {..} Y`.
fn typedef_map(headers: &[Header]) -> HashMap<String, CType> {
    let mut map = HashMap::new();
    let named = |name: String| CType::Named { name, konst: false };
    for item in headers.iter().flat_map(|h| &h.items) {
        match item {
            Item::Typedef { name, ty } => {
                map.insert(name.clone(), ty.clone());
            }
            Item::Struct(s) => {
                if let (Some(tag), Some(alias)) = (&s.tag, &s.alias) {
                    map.insert(alias.clone(), named(format!("struct {tag}")));
                }
            }
            Item::Enum(e) => {
                if let (Some(tag), Some(alias)) = (&e.tag, &e.alias) {
                    map.insert(alias.clone(), named(format!("enum {tag}")));
                }
            }
            _ => {}
        }
    }
    map
}
