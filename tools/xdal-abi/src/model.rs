//! The description of an ABI (abi.json): every exported symbol with its
//! signature, every struct with its size, alignment and each field's offset
//! and type, every enum with its values, every macro, and the SONAME. It is
//! made from the artefacts alone (headers and library), so it describes a
//! vendor's fork as well as this tree.
use serde::{Deserialize, Serialize};

/// Written into every description; a reader refuses any other.
pub const FORMAT: &str = "xdal-abi-description/1";

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Description {
    pub format: String,
    /// DT_SONAME of the library.
    pub soname: Option<String>,
    /// The header files described, by file name.
    pub headers: Vec<String>,
    /// Symbols the library exports (defined, global or weak, default
    /// visibility), sorted.
    pub symbols: Vec<String>,
    pub macros: Vec<Macro>,
    pub functions: Vec<Function>,
    pub structs: Vec<Struct>,
    /// Struct tags that are declared but never defined (handle targets).
    pub opaque_structs: Vec<String>,
    pub enums: Vec<Enum>,
    pub typedefs: Vec<Typedef>,
    /// The backend-table entries the front refuses a backend without, from
    /// the library's manifest (absent in baselines frozen without one:
    /// their headers' "Required." marks stand for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_entries: Option<Vec<String>>,
    /// The built-in kernel catalogue, from the library's manifest, in order:
    /// each kernel as `name(size,size,..)`, the exact byte size of each
    /// argument (one line per kernel in abi.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtins: Option<Vec<String>>,
    /// Why the headers could not be measured by the C compiler, if they
    /// could not (then sizes, enum values and macro values are unknown).
    #[serde(skip)]
    pub probe_failure: Option<String>,
}

/// One built-in kernel: its name and the exact byte size of each argument.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BuiltinKernel {
    pub name: String,
    pub arg_sizes: Vec<u64>,
}

impl BuiltinKernel {
    /// `name(size,size,..)`, as a baseline records it.
    pub fn signature(&self) -> String {
        let sizes: Vec<String> = self.arg_sizes.iter().map(u64::to_string).collect();
        format!("{}({})", self.name, sizes.join(","))
    }

    /// Reads `signature`'s form back.
    pub fn parse(signature: &str) -> Option<BuiltinKernel> {
        let (name, rest) = signature.split_once('(')?;
        let sizes = rest.strip_suffix(')')?;
        let arg_sizes = if sizes.is_empty() {
            Vec::new()
        } else {
            sizes.split(',').map(|s| s.parse().ok()).collect::<Option<_>>()?
        };
        Some(BuiltinKernel { name: name.to_string(), arg_sizes })
    }
}

/// A type, as the header spells it and in canonical form (typedefs
/// resolved, integer keywords as fixed-width types): the form compared.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Type {
    pub c: String,
    pub canonical: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Macro {
    pub name: String,
    pub header: String,
    /// The replacement text as written.
    pub value: String,
    /// Its value as the C compiler evaluates it, for integer macros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int: Option<i64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub header: String,
    /// Whether the library exports it (false for what a backend exports,
    /// such as `xdal_backend_get_v1`).
    pub exported: bool,
    /// The normalised prototype, for people.
    pub prototype: String,
    pub returns: Type,
    pub params: Vec<Param>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub variadic: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: Type,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Struct {
    /// The tag (`struct <name>`), or the typedef name of an untagged struct.
    pub name: String,
    pub header: String,
    pub size: u64,
    pub align: u64,
    /// Starts with `size_t struct_size`: may grow at the end in a minor.
    pub extensible: bool,
    /// A table of function pointers that backends fill (an extensible
    /// struct whose entries are function pointers).
    pub table: bool,
    pub fields: Vec<Field>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: Type,
    pub offset: u64,
    pub size: u64,
    /// For table entries: whether the documentation says "Required."
    #[serde(default, skip_serializing_if = "Requirement::is_optional")]
    pub requirement: Requirement,
}

/// What a field's documentation says a backend must fill.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    #[default]
    Optional,
    /// "Required when `x` is set": required if any of these is filled.
    RequiredWhen(Vec<String>),
    /// "Required.": every backend must fill it.
    Required,
}

impl Requirement {
    pub fn is_optional(&self) -> bool {
        *self == Requirement::Optional
    }

    /// Reads a field's doc comment: a sentence "Required." makes it
    /// required; "Required when `a` (or `b`) is set" makes it conditional.
    pub fn from_doc(doc: &str) -> Requirement {
        let sentences = doc.split(". ").map(str::trim);
        for sentence in sentences {
            if sentence == "Required" || sentence == "Required." {
                return Requirement::Required;
            }
            if let Some(rest) = sentence.strip_prefix("Required when ") {
                let names: Vec<String> =
                    rest.split('`').skip(1).step_by(2).map(str::to_string).filter(|s| !s.is_empty()).collect();
                return Requirement::RequiredWhen(names);
            }
        }
        Requirement::Optional
    }

    /// How strong: optional < conditional < required.
    pub fn rank(&self) -> u8 {
        match self {
            Requirement::Optional => 0,
            Requirement::RequiredWhen(_) => 1,
            Requirement::Required => 2,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Enum {
    pub name: String,
    pub header: String,
    /// `sizeof` the enum type.
    pub size: u64,
    pub values: Vec<Enumerator>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Enumerator {
    pub name: String,
    pub value: i64,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Typedef {
    pub name: String,
    pub header: String,
    #[serde(rename = "type")]
    pub ty: Type,
}

impl Description {
    /// The integer value of a macro.
    pub fn macro_int(&self, name: &str) -> Option<i64> {
        self.macros.iter().find(|m| m.name == name).and_then(|m| m.int)
    }

    /// `XDAL_ABI_VERSION_MAJOR.MINOR`.
    pub fn abi_version(&self) -> Option<(i64, i64)> {
        Some((self.macro_int("XDAL_ABI_VERSION_MAJOR")?, self.macro_int("XDAL_ABI_VERSION_MINOR")?))
    }

    /// `XDAL_VERSION_MAJOR.MINOR.PATCH`.
    pub fn library_version(&self) -> Option<(i64, i64, i64)> {
        Some((
            self.macro_int("XDAL_VERSION_MAJOR")?,
            self.macro_int("XDAL_VERSION_MINOR")?,
            self.macro_int("XDAL_VERSION_PATCH")?,
        ))
    }

    pub fn from_json(text: &str) -> Result<Description, String> {
        let d: Description = serde_json::from_str(text).map_err(|e| format!("not an ABI description: {e}"))?;
        if d.format != FORMAT {
            return Err(format!("description format {:?}, this tool reads {FORMAT:?}", d.format));
        }
        Ok(d)
    }

    /// The table entries a backend built against this description must fill:
    /// the recorded set, else the entries the headers mark "Required.".
    pub fn required_entries(&self) -> Vec<String> {
        if let Some(recorded) = &self.required_entries {
            return recorded.clone();
        }
        let table = self.structs.iter().find(|s| s.table);
        let entries = table.into_iter().flat_map(|t| &t.fields);
        entries
            .filter(|f| f.requirement == Requirement::Required && f.ty.canonical.contains("(*)"))
            .map(|f| f.name.clone())
            .collect()
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a description serializes");
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::{BuiltinKernel, Requirement};

    #[test]
    fn builtin_signatures_round_trip() {
        let k = BuiltinKernel { name: "fill_f32".into(), arg_sizes: vec![8, 8, 4] };
        assert_eq!(k.signature(), "fill_f32(8,8,4)");
        assert_eq!(BuiltinKernel::parse("fill_f32(8,8,4)"), Some(k));
        assert_eq!(BuiltinKernel::parse("none()").map(|k| k.arg_sizes), Some(vec![]));
        assert_eq!(BuiltinKernel::parse("fill_f32(8,x)"), None);
        assert_eq!(BuiltinKernel::parse("fill_f32"), None);
    }

    #[test]
    fn requirement_from_doc() {
        assert_eq!(Requirement::from_doc("Required. Writes the count."), Requirement::Required);
        assert_eq!(Requirement::from_doc("NUL-terminated backend name. Required."), Requirement::Required);
        assert_eq!(
            Requirement::from_doc("Frees it. Required when `mem_alloc_host` is set."),
            Requirement::RequiredWhen(vec!["mem_alloc_host".into()])
        );
        assert_eq!(Requirement::from_doc("Fallback: 0. Not required."), Requirement::Optional);
    }
}
