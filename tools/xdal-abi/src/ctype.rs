//! C types as the headers spell them: a small declarator parser (enough for
//! what cbindgen writes: pointers, arrays, function pointers, qualifiers),
//! a printer that writes one normalised spelling, and the canonical form
//! (typedefs resolved, C integer keywords written as fixed-width types) that
//! the checker compares.
use std::collections::HashMap;
use std::fmt;

/// A C type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CType {
    /// A type name: `int`, `size_t`, `xdal_status_t`, `struct xdal_dim3`.
    Named {
        name: String,
        konst: bool,
    },
    Pointer {
        to: Box<CType>,
        konst: bool,
    },
    Array {
        of: Box<CType>,
        len: String,
    },
    Function {
        ret: Box<CType>,
        params: Vec<CType>,
        variadic: bool,
    },
}

/// A lexical token of a declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    Num(String),
    Punct(char),
    Ellipsis,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) | Tok::Num(s) => f.write_str(s),
            Tok::Punct(c) => write!(f, "{c}"),
            Tok::Ellipsis => f.write_str("..."),
        }
    }
}

/// Joins tokens back into text, with spaces only between words.
pub fn join(tokens: &[Tok]) -> String {
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let word = |t: &Tok| matches!(t, Tok::Ident(_) | Tok::Num(_));
        if i > 0 && word(t) && word(&tokens[i - 1]) {
            out.push(' ');
        }
        out.push_str(&t.to_string());
    }
    out
}

/// Words that are part of a type specifier, never a declarator's name.
const TYPE_WORDS: &[&str] = &[
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool", "bool", "const",
    "volatile", "restrict", "struct", "enum", "union",
];

/// Qualifiers: kept for `const`, dropped for the others (no ABI meaning).
fn is_qualifier(word: &str) -> bool {
    matches!(word, "const" | "volatile" | "restrict" | "__restrict")
}

/// A parsed declaration: its name (None when abstract) and type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    pub name: Option<String>,
    pub ty: CType,
    /// Parameter names, when `ty` is a function (for the description).
    pub param_names: Vec<Option<String>>,
}

/// Parses one declaration (`size_t struct_size`, `xdal_status_t (*f)(int *x)`,
/// `const char *xdal_status_string(xdal_status_t status)`, `int[3]`).
pub fn parse_declaration(tokens: &[Tok]) -> Result<Declaration, String> {
    let mut p = Parser { toks: tokens, pos: 0 };
    let decl = p.declaration()?;
    if p.pos != tokens.len() {
        return Err(format!("cannot parse `{}`: unexpected `{}`", join(tokens), tokens[p.pos]));
    }
    Ok(decl)
}

/// What a declarator adds to the base type.
struct Declarator {
    name: Option<String>,
    /// In the order they apply to the base type.
    derivs: Vec<Deriv>,
    params: Vec<Option<String>>,
}

/// One step from the base type to the declared type.
enum Deriv {
    Pointer(bool),
    Array(String),
    Function(Vec<Declaration>, bool),
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.punct(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{c}` in `{}`", join(self.toks)))
        }
    }

    fn declaration(&mut self) -> Result<Declaration, String> {
        let (base, name) = self.specifiers()?;
        if let Some(name) = name {
            return self.finish(base, Some(name), Vec::new());
        }
        let d = self.declarator()?;
        Ok(Declaration { name: d.name, ty: apply(base, d.derivs), param_names: d.params })
    }

    /// The base type, and the declarator's name when it is the last word of
    /// a run of identifiers (`size_t size`, `unsigned int count`).
    fn specifiers(&mut self) -> Result<(CType, Option<String>), String> {
        let mut words = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek() {
            words.push(w.clone());
            self.pos += 1;
        }
        let konst = words.iter().any(|w| w == "const");
        let mut words: Vec<String> = words.into_iter().filter(|w| !is_qualifier(w)).collect();
        if words.is_empty() {
            return Err(format!("no type in `{}`", join(self.toks)));
        }
        let mut name = None;
        if words.len() > 1 {
            let last = &words[words.len() - 1];
            let before = &words[words.len() - 2];
            let tag = matches!(before.as_str(), "struct" | "enum" | "union");
            if !tag && !TYPE_WORDS.contains(&last.as_str()) {
                name = words.pop();
            }
        }
        Ok((CType::Named { name: words.join(" "), konst }, name))
    }

    fn finish(&mut self, base: CType, name: Option<String>, mut derivs: Vec<Deriv>) -> Result<Declaration, String> {
        let (suffixes, params) = self.suffixes()?;
        derivs.extend(suffixes.into_iter().rev());
        Ok(Declaration { name, ty: apply(base, derivs), param_names: params })
    }

    /// Pointers, then a name or a parenthesised declarator, then suffixes.
    fn declarator(&mut self) -> Result<Declarator, String> {
        let mut derivs = Vec::new();
        while self.punct('*') {
            self.pos += 1;
            let mut konst = false;
            while let Some(Tok::Ident(w)) = self.peek() {
                if !is_qualifier(w) {
                    break;
                }
                konst |= w == "const";
                self.pos += 1;
            }
            derivs.push(Deriv::Pointer(konst));
        }
        let mut name = None;
        let mut inner = None;
        match self.peek() {
            Some(Tok::Ident(w)) => {
                name = Some(w.clone());
                self.pos += 1;
            }
            Some(Tok::Punct('(')) if matches!(self.toks.get(self.pos + 1), Some(Tok::Punct('*' | '('))) => {
                self.pos += 1;
                inner = Some(self.declarator()?);
                self.expect(')')?;
            }
            _ => {}
        }
        let (suffixes, mut params) = self.suffixes()?;
        derivs.extend(suffixes.into_iter().rev());
        if let Some(inner) = inner {
            derivs.extend(inner.derivs);
            name = inner.name;
            if !inner.params.is_empty() {
                params = inner.params;
            }
        }
        Ok(Declarator { name, derivs, params })
    }

    /// Array and function suffixes, left to right.
    fn suffixes(&mut self) -> Result<(Vec<Deriv>, Vec<Option<String>>), String> {
        let mut out = Vec::new();
        let mut names = Vec::new();
        loop {
            if self.punct('[') {
                self.pos += 1;
                let start = self.pos;
                while !self.punct(']') {
                    if self.peek().is_none() {
                        return Err(format!("unclosed `[` in `{}`", join(self.toks)));
                    }
                    self.pos += 1;
                }
                let len = join(&self.toks[start..self.pos]);
                self.pos += 1;
                out.push(Deriv::Array(len));
            } else if self.punct('(') {
                self.pos += 1;
                let (params, variadic) = self.parameters()?;
                if names.is_empty() {
                    names = params.iter().map(|p| p.name.clone()).collect();
                }
                out.push(Deriv::Function(params, variadic));
            } else {
                return Ok((out, names));
            }
        }
    }

    fn parameters(&mut self) -> Result<(Vec<Declaration>, bool), String> {
        let mut groups: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut depth = 0usize;
        loop {
            let Some(t) = self.peek().cloned() else {
                return Err(format!("unclosed `(` in `{}`", join(self.toks)));
            };
            self.pos += 1;
            match t {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') if depth == 0 => break,
                Tok::Punct(')') => depth -= 1,
                Tok::Punct(',') if depth == 0 => {
                    groups.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            groups.last_mut().expect("one group at least").push(t);
        }
        let mut params = Vec::new();
        let mut variadic = false;
        for group in groups {
            match group.as_slice() {
                [] => {}
                [Tok::Ident(v)] if v == "void" => {}
                [Tok::Ellipsis] => variadic = true,
                tokens => params.push(parse_declaration(tokens)?),
            }
        }
        Ok((params, variadic))
    }
}

fn apply(base: CType, derivs: Vec<Deriv>) -> CType {
    derivs.into_iter().fold(base, |ty, d| match d {
        Deriv::Pointer(konst) => CType::Pointer { to: Box::new(ty), konst },
        Deriv::Array(len) => CType::Array { of: Box::new(ty), len },
        Deriv::Function(params, variadic) => {
            CType::Function { ret: Box::new(ty), params: params.into_iter().map(|p| p.ty).collect(), variadic }
        }
    })
}

impl CType {
    /// The abstract C spelling with `inner` as the declarator.
    fn spell(&self, inner: &str) -> String {
        match self {
            CType::Named { name, konst } => {
                let base = if *konst { format!("const {name}") } else { name.clone() };
                if inner.is_empty() {
                    base
                } else if inner.starts_with('*') || inner.starts_with('[') {
                    format!("{base}{inner}")
                } else {
                    format!("{base} {inner}")
                }
            }
            CType::Pointer { to, konst } => {
                let mut star = String::from("*");
                if *konst {
                    star.push_str(" const");
                }
                if inner.starts_with('(') {
                    star.push(' ');
                }
                star.push_str(inner);
                if matches!(**to, CType::Array { .. } | CType::Function { .. }) {
                    star = format!("({star})");
                }
                to.spell(&star)
            }
            CType::Array { of, len } => of.spell(&format!("{inner}[{len}]")),
            CType::Function { ret, params, variadic } => {
                let mut list: Vec<String> = params.iter().map(|p| p.spell("")).collect();
                if *variadic {
                    list.push("...".into());
                }
                if list.is_empty() {
                    list.push("void".into());
                }
                ret.spell(&format!("{inner}({})", list.join(", ")))
            }
        }
    }

    /// A function pointer (the shape of a backend-table entry).
    pub fn is_function_pointer(&self) -> bool {
        matches!(self, CType::Pointer { to, .. } if matches!(**to, CType::Function { .. }))
    }

    /// Typedefs resolved, integer keywords as fixed-width names (LP64).
    pub fn canonical(&self, typedefs: &HashMap<String, CType>) -> CType {
        self.canonical_at(typedefs, 0)
    }

    fn canonical_at(&self, typedefs: &HashMap<String, CType>, depth: usize) -> CType {
        match self {
            CType::Named { name, konst } => match typedefs.get(name) {
                Some(target) if depth < 32 && target != self => {
                    let resolved = target.canonical_at(typedefs, depth + 1);
                    if *konst {
                        resolved.with_const()
                    } else {
                        resolved
                    }
                }
                _ => CType::Named { name: fixed_width(name).to_string(), konst: *konst },
            },
            CType::Pointer { to, konst } => {
                CType::Pointer { to: Box::new(to.canonical_at(typedefs, depth)), konst: *konst }
            }
            CType::Array { of, len } => {
                CType::Array { of: Box::new(of.canonical_at(typedefs, depth)), len: len.clone() }
            }
            CType::Function { ret, params, variadic } => CType::Function {
                ret: Box::new(ret.canonical_at(typedefs, depth)),
                params: params.iter().map(|p| p.canonical_at(typedefs, depth)).collect(),
                variadic: *variadic,
            },
        }
    }

    fn with_const(self) -> CType {
        match self {
            CType::Named { name, .. } => CType::Named { name, konst: true },
            CType::Pointer { to, .. } => CType::Pointer { to, konst: true },
            other => other,
        }
    }
}

impl fmt::Display for CType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spell(""))
    }
}

/// C's integer keywords as the fixed-width type they are on LP64 Linux, so
/// that `int` and `int32_t` compare equal while `int` and `int64_t` do not.
fn fixed_width(name: &str) -> &str {
    match name {
        "int" | "signed" | "signed int" => "int32_t",
        "unsigned" | "unsigned int" => "uint32_t",
        "short" | "short int" | "signed short" | "signed short int" => "int16_t",
        "unsigned short" | "unsigned short int" => "uint16_t",
        "long" | "long int" | "signed long" | "long long" | "long long int" | "signed long long" => "int64_t",
        "unsigned long" | "unsigned long int" | "unsigned long long" | "unsigned long long int" => "uint64_t",
        "signed char" => "int8_t",
        "unsigned char" => "uint8_t",
        "_Bool" => "bool",
        other => other,
    }
}

/// Splits declaration text into tokens (comments already removed).
pub fn tokenize(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num(chars[start..i].iter().collect()));
        } else if text[byte_index(&chars, i)..].starts_with("...") {
            out.push(Tok::Ellipsis);
            i += 3;
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

fn byte_index(chars: &[char], i: usize) -> usize {
    chars[..i].iter().map(|c| c.len_utf8()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(text: &str) -> Declaration {
        parse_declaration(&tokenize(text)).unwrap()
    }

    #[test]
    fn plain_fields_and_arrays() {
        let d = decl("size_t struct_size");
        assert_eq!((d.name.as_deref(), d.ty.to_string().as_str()), (Some("struct_size"), "size_t"));
        let d = decl("char name[256]");
        assert_eq!((d.name.as_deref(), d.ty.to_string().as_str()), (Some("name"), "char[256]"));
        let d = decl("unsigned int count");
        assert_eq!((d.name.as_deref(), d.ty.to_string().as_str()), (Some("count"), "unsigned int"));
        assert_eq!(decl("struct xdal_dim3").name, None);
    }

    #[test]
    fn pointers_and_qualifiers() {
        assert_eq!(decl("void *const *args").ty.to_string(), "void* const*");
        assert_eq!(decl("const char *name").ty.to_string(), "const char*");
        assert_eq!(decl("const xdal_backend_v1_t **table").ty.to_string(), "const xdal_backend_v1_t**");
    }

    #[test]
    fn functions_and_function_pointers() {
        let d = decl("xdal_status_t (*device_get_count)(int *count)");
        assert_eq!(d.name.as_deref(), Some("device_get_count"));
        assert_eq!(d.ty.to_string(), "xdal_status_t (*)(int*)");
        assert!(d.ty.is_function_pointer());
        let d = decl("const char *(*last_error_message)(void)");
        assert_eq!(d.ty.to_string(), "const char* (*)(void)");
        let d = decl("const char *xdal_status_string(xdal_status_t status)");
        assert_eq!(d.name.as_deref(), Some("xdal_status_string"));
        assert_eq!(d.param_names, vec![Some("status".to_string())]);
        assert_eq!(d.ty.to_string(), "const char* (xdal_status_t)");
    }

    #[test]
    fn canonical_resolves_typedefs_and_int_keywords() {
        let mut typedefs = HashMap::new();
        typedefs.insert("xdal_status_t".to_string(), decl("enum xdal_status").ty);
        typedefs.insert("xdal_stream_t".to_string(), decl("struct xdal_stream_s *").ty);
        let f = decl("xdal_status_t f(xdal_stream_t s, int device, long n)").ty;
        assert_eq!(f.canonical(&typedefs).to_string(), "enum xdal_status (struct xdal_stream_s*, int32_t, int64_t)");
    }
}
