//! The library's own manifest (`xdal-abi-manifest`, built from the same
//! sources in the same build): the backend-table entries the front
//! requires, the built-in kernel catalogue, and the layouts the Rust
//! compiler gave the ABI types. What the headers cannot carry, or carry
//! only as far as cbindgen can express it.
use crate::model::BuiltinKernel;
use serde::Deserialize;
use std::path::Path;
use std::process::Command;

/// Written into every manifest; any other is refused.
pub const FORMAT: &str = "xdal-abi-manifest/1";

#[derive(Deserialize, Debug, Clone)]
pub struct Manifest {
    pub format: String,
    /// `[XDAL_ABI_VERSION_MAJOR, XDAL_ABI_VERSION_MINOR]` of the library.
    pub abi_version: (i64, i64),
    pub required_entries: Vec<String>,
    pub builtins: Vec<BuiltinKernel>,
    pub layouts: Vec<Layout>,
}

/// One type as the compiler laid it out.
#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub name: String,
    pub size: u64,
    pub align: u64,
    pub fields: Vec<FieldLayout>,
}

#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FieldLayout {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

impl Manifest {
    /// Runs `program` (an `xdal-abi-manifest` binary) and reads what it prints.
    pub fn from_program(program: &Path) -> Result<Manifest, String> {
        let out = Command::new(program)
            .output()
            .map_err(|e| format!("cannot run the manifest program {}: {e}", program.display()))?;
        if !out.status.success() {
            return Err(format!(
                "the manifest program {} failed ({}): {}",
                program.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Manifest::from_json(&String::from_utf8_lossy(&out.stdout)).map_err(|e| format!("{}: {e}", program.display()))
    }

    pub fn from_json(text: &str) -> Result<Manifest, String> {
        let m: Manifest = serde_json::from_str(text).map_err(|e| format!("not a manifest: {e}"))?;
        if m.format != FORMAT {
            return Err(format!("manifest format {:?}, this tool reads {FORMAT:?}", m.format));
        }
        Ok(m)
    }

    /// Records in `d` what a baseline keeps of the manifest: the required
    /// entries and the catalogue (one `name(sizes)` per kernel).
    pub fn record_in(&self, d: &mut crate::model::Description) {
        d.required_entries = Some(self.required_entries.clone());
        d.builtins = Some(self.builtins.iter().map(BuiltinKernel::signature).collect());
    }

    /// The layout of the type called `name`.
    pub fn layout(&self, name: &str) -> Option<&Layout> {
        self.layouts.iter().find(|l| l.name == name)
    }
}
