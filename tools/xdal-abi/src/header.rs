//! Reads a cbindgen-style C header into its declarations: `#define`s,
//! `typedef struct`/`typedef enum` blocks with the doc comment of every
//! field and value, typedefs and prototypes. What the C++ guards enclose
//! (`#ifdef __cplusplus`) is skipped; other conditionals are read through.
use crate::ctype::{join, parse_declaration, tokenize, CType, Tok};

/// One header, parsed.
#[derive(Debug, Default)]
pub struct Header {
    pub file: String,
    pub defines: Vec<Define>,
    pub items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub struct Define {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone)]
pub enum Item {
    Struct(StructDef),
    Enum(EnumDef),
    /// `typedef <type> name;`; `typedef struct X X;` declares an opaque tag.
    Typedef {
        name: String,
        ty: CType,
    },
    /// `struct X;`: a tag declared without a body.
    Tag(String),
    Function {
        name: String,
        ty: CType,
        param_names: Vec<Option<String>>,
    },
}

#[derive(Debug, Clone)]
pub struct StructDef {
    /// The tag (`struct <tag>`), if any.
    pub tag: Option<String>,
    /// The name of `typedef struct ... <alias>;`, if any.
    pub alias: Option<String>,
    pub fields: Vec<FieldDef>,
}

#[derive(Debug, Clone)]
pub struct FieldDef {
    pub name: String,
    pub ty: CType,
    /// The doc comment before the field, on one line.
    pub doc: String,
}

#[derive(Debug, Clone)]
pub struct EnumDef {
    pub tag: Option<String>,
    pub alias: Option<String>,
    /// Each enumerator with its value expression as written, if any.
    pub values: Vec<(String, Option<String>)>,
}

/// What the scanner sees.
#[derive(Debug, Clone)]
enum Lexeme {
    Doc(String),
    Directive(String),
    Tok(Tok),
    Str,
}

/// Parses the text of one header.
pub fn parse(file: &str, text: &str) -> Result<Header, String> {
    let mut header = Header { file: file.to_string(), ..Header::default() };
    let mut skip_depth = 0usize;
    let mut depth = 0usize;
    let mut current: Vec<Lexeme> = Vec::new();
    for lexeme in scan(text) {
        if let Lexeme::Directive(line) = &lexeme {
            directive(line, &mut skip_depth, &mut header.defines);
            continue;
        }
        if skip_depth > 0 {
            continue;
        }
        match &lexeme {
            Lexeme::Doc(_) if current.is_empty() => continue,
            Lexeme::Tok(Tok::Punct('{')) => depth += 1,
            Lexeme::Tok(Tok::Punct('}')) => depth = depth.saturating_sub(1),
            Lexeme::Tok(Tok::Punct(';')) if depth == 0 => {
                let decl = std::mem::take(&mut current);
                header.items.extend(declaration(&decl).map_err(|e| format!("{file}: {e}"))?);
                continue;
            }
            _ => {}
        }
        current.push(lexeme);
    }
    if current.iter().any(|l| matches!(l, Lexeme::Tok(_))) {
        return Err(format!("{file}: declaration without a closing `;` at the end"));
    }
    Ok(header)
}

/// Handles one preprocessor line: defines are kept, C++-only blocks skipped.
fn directive(line: &str, skip_depth: &mut usize, defines: &mut Vec<Define>) {
    let body = line.trim_start_matches('#').trim();
    let (word, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let rest = rest.trim();
    match word {
        "ifdef" | "ifndef" | "if" if *skip_depth > 0 => *skip_depth += 1,
        "ifdef" if rest == "__cplusplus" => *skip_depth = 1,
        "endif" if *skip_depth > 0 => *skip_depth -= 1,
        "define" if *skip_depth == 0 => {
            let name_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let (name, value) = rest.split_at(name_end);
            // Function-like macros and include guards (no value) are not ABI.
            if !value.starts_with('(') && !value.trim().is_empty() {
                defines.push(Define { name: name.to_string(), value: value.trim().to_string() });
            }
        }
        _ => {}
    }
}

/// Splits text into doc comments, directives, string literals and tokens.
fn scan(text: &str) -> Vec<Lexeme> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut line_start = true;
    let mut plain = String::new();
    let flush = |plain: &mut String, out: &mut Vec<Lexeme>| {
        out.extend(tokenize(plain).into_iter().map(Lexeme::Tok));
        plain.clear();
    };
    while let Some(c) = rest.chars().next() {
        if line_start && c == '#' {
            flush(&mut plain, &mut out);
            let mut line = String::new();
            loop {
                let end = rest.find('\n').unwrap_or(rest.len());
                let part = &rest[..end];
                rest = &rest[(end + 1).min(rest.len())..];
                match part.strip_suffix('\\') {
                    Some(head) => line.push_str(head),
                    None => {
                        line.push_str(part);
                        break;
                    }
                }
            }
            out.push(Lexeme::Directive(strip_line_comment(&line)));
            continue;
        }
        if rest.starts_with("/*") {
            flush(&mut plain, &mut out);
            let end = rest[2..].find("*/").map_or(rest.len(), |e| e + 4);
            let comment = &rest[..end];
            if comment.starts_with("/**") && comment.len() > 4 {
                out.push(Lexeme::Doc(doc_text(comment)));
            }
            rest = &rest[end..];
            continue;
        }
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            rest = &rest[end..];
            continue;
        }
        if c == '"' {
            flush(&mut plain, &mut out);
            let end = rest[1..].find('"').map_or(rest.len(), |e| e + 2);
            out.push(Lexeme::Str);
            rest = &rest[end..];
            line_start = false;
            continue;
        }
        if matches!(c, '{' | '}' | ';' | ',' | '=') {
            flush(&mut plain, &mut out);
            out.push(Lexeme::Tok(Tok::Punct(c)));
        } else {
            plain.push(c);
        }
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
        rest = &rest[c.len_utf8()..];
    }
    flush(&mut plain, &mut out);
    out
}

fn strip_line_comment(line: &str) -> String {
    let cut = [line.find("//"), line.find("/*")].into_iter().flatten().min().unwrap_or(line.len());
    line[..cut].trim().to_string()
}

/// A doc comment as one line of text.
fn doc_text(comment: &str) -> String {
    let inner = comment.trim_start_matches("/**").trim_end_matches("*/");
    let lines = inner.lines().map(|l| l.trim().trim_start_matches('*').trim()).filter(|l| !l.is_empty());
    lines.collect::<Vec<_>>().join(" ")
}

/// The tokens of a declaration, with the braces' content split off.
struct Split {
    head: Vec<Tok>,
    body: Option<Vec<Lexeme>>,
    tail: Vec<Tok>,
}

fn split(decl: &[Lexeme]) -> Result<Split, String> {
    let mut s = Split { head: Vec::new(), body: None, tail: Vec::new() };
    let mut depth = 0usize;
    let mut body = Vec::new();
    for lexeme in decl {
        match lexeme {
            Lexeme::Tok(Tok::Punct('{')) => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            Lexeme::Tok(Tok::Punct('}')) => {
                depth -= 1;
                if depth == 0 {
                    s.body = Some(std::mem::take(&mut body));
                    continue;
                }
            }
            Lexeme::Str => return Err("a string literal outside `#ifdef __cplusplus`".into()),
            _ => {}
        }
        match (depth, lexeme, s.body.is_some()) {
            (0, Lexeme::Tok(t), false) => s.head.push(t.clone()),
            (0, Lexeme::Tok(t), true) => s.tail.push(t.clone()),
            (0, _, _) => {}
            _ => body.push(lexeme.clone()),
        }
    }
    Ok(s)
}

fn ident(t: Option<&Tok>) -> Option<String> {
    match t {
        Some(Tok::Ident(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Turns one top-level declaration into items.
fn declaration(decl: &[Lexeme]) -> Result<Vec<Item>, String> {
    let s = split(decl)?;
    let typedef = s.head.first() == Some(&Tok::Ident("typedef".into()));
    let head = if typedef { &s.head[1..] } else { &s.head[..] };
    if let Some(body) = s.body {
        let kind = ident(head.first()).unwrap_or_default();
        let tag = ident(head.get(1));
        let alias = if typedef { ident(s.tail.first()) } else { None };
        return Ok(vec![match kind.as_str() {
            "struct" => Item::Struct(StructDef { tag, alias, fields: fields(&body)? }),
            "enum" => Item::Enum(EnumDef { tag, alias, values: enumerators(&body)? }),
            other => return Err(format!("unsupported `{other} {{ ... }}` block")),
        }]);
    }
    let head: Vec<Tok> = head.iter().filter(|t| **t != Tok::Ident("extern".into())).cloned().collect();
    if let [Tok::Ident(kw), Tok::Ident(tag)] = head.as_slice() {
        if !typedef && matches!(kw.as_str(), "struct" | "union" | "enum") {
            return Ok(vec![Item::Tag(tag.clone())]);
        }
    }
    let d = parse_declaration(&head)?;
    let Some(name) = d.name else {
        return Err(format!("a declaration without a name: `{}`", join(&head)));
    };
    Ok(match (typedef, &d.ty) {
        (true, _) => vec![Item::Typedef { name, ty: d.ty }],
        (false, CType::Function { .. }) => vec![Item::Function { name, ty: d.ty, param_names: d.param_names }],
        // An exported variable is still a symbol, and is checked as one.
        (false, _) => Vec::new(),
    })
}

/// The fields of a struct body, each with its doc comment.
fn fields(body: &[Lexeme]) -> Result<Vec<FieldDef>, String> {
    let mut out = Vec::new();
    let mut doc = String::new();
    let mut tokens = Vec::new();
    for lexeme in body {
        match lexeme {
            Lexeme::Doc(d) if tokens.is_empty() => doc = d.clone(),
            Lexeme::Tok(Tok::Punct(';')) => {
                let d = parse_declaration(&tokens)?;
                let name = d.name.ok_or_else(|| format!("a field without a name: `{}`", join(&tokens)))?;
                out.push(FieldDef { name, ty: d.ty, doc: std::mem::take(&mut doc) });
                tokens.clear();
            }
            Lexeme::Tok(Tok::Punct('{' | '}')) => return Err("nested struct or union bodies are not supported".into()),
            Lexeme::Tok(t) => tokens.push(t.clone()),
            _ => {}
        }
    }
    Ok(out)
}

/// The enumerators of an enum body, with their value expressions.
fn enumerators(body: &[Lexeme]) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out = Vec::new();
    let toks: Vec<Tok> = body
        .iter()
        .filter_map(|l| match l {
            Lexeme::Tok(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    for part in toks.split(|t| *t == Tok::Punct(',')) {
        match part {
            [] => {}
            [Tok::Ident(name)] => out.push((name.clone(), None)),
            [Tok::Ident(name), Tok::Punct('='), value @ ..] if !value.is_empty() => {
                out.push((name.clone(), Some(join(value))))
            }
            other => return Err(format!("cannot read enumerator `{}`", join(other))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
#ifndef GUARD_H
#define GUARD_H
#include <stdint.h>
/**
 * The major.
 */
#define X_MAJOR 1
#define X_ALL (X_A | X_B) // a comment
typedef enum x_status {
  /** ok */
  X_OK = 0,
  X_BAD = 1 << 2,
} x_status;
typedef struct x_opaque_s x_opaque_s;
typedef struct x_table {
  /**
   * Size.
   */
  size_t struct_size;
  /** Required. Counts. */
  x_status (*count)(int *n,
                    const char *name);
  uint32_t dims[3];
} x_table;
#ifdef __cplusplus
extern "C" {
#endif // __cplusplus
extern x_status x_get(const x_table **table);
const char *x_name(void);
#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus
#endif
"#;

    #[test]
    fn reads_defines_enums_structs_and_prototypes() {
        let h = parse("x.h", SAMPLE).unwrap();
        let defines: Vec<_> = h.defines.iter().map(|d| (d.name.as_str(), d.value.as_str())).collect();
        assert_eq!(defines, vec![("X_MAJOR", "1"), ("X_ALL", "(X_A | X_B)")]);
        let Item::Enum(e) = &h.items[0] else { panic!("{:?}", h.items[0]) };
        assert_eq!(e.values[1], ("X_BAD".to_string(), Some("1<<2".to_string())));
        assert!(matches!(&h.items[1], Item::Typedef { name, .. } if name == "x_opaque_s"));
        let Item::Struct(s) = &h.items[2] else { panic!("{:?}", h.items[2]) };
        assert_eq!(s.alias.as_deref(), Some("x_table"));
        assert_eq!(s.fields[0].doc, "Size.");
        assert_eq!(s.fields[1].doc, "Required. Counts.");
        assert_eq!(s.fields[1].ty.to_string(), "x_status (*)(int*, const char*)");
        assert_eq!(s.fields[2].ty.to_string(), "uint32_t[3]");
        assert!(matches!(&h.items[3], Item::Function { name, .. } if name == "x_get"));
        assert!(matches!(&h.items[4], Item::Function { name, .. } if name == "x_name"));
        assert_eq!(h.items.len(), 5);
    }
}
