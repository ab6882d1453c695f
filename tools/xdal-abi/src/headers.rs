//! `xdal-abi headers`: writes the public headers cbindgen makes of a source
//! tree, the same two the golden test (tests/headers.rs) holds the committed
//! ones to. It lets a script regenerate the headers of a changed tree without
//! building that tree's test harness (the ABI self-test does this per variant).
use std::path::Path;

/// Each public header: its file name, the crate it is made from and that
/// crate's cbindgen configuration, relative to the source root.
const HEADERS: [(&str, &str, &str); 2] =
    [("xdal.h", ".", "cbindgen.toml"), ("xdal_backend.h", "abi", "abi/cbindgen-backend.toml")];

/// Generates every header of the tree at `root` into `out`.
pub fn write_headers(root: &Path, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for (name, crate_dir, config) in HEADERS {
        let config_path = root.join(config);
        let config = cbindgen::Config::from_file(&config_path)
            .map_err(|e| format!("cannot read {}: {e}", config_path.display()))?;
        let bindings = cbindgen::Builder::new()
            .with_crate(root.join(crate_dir))
            .with_config(config)
            .generate()
            .map_err(|e| format!("cbindgen cannot generate {name}: {e}"))?;
        let mut text = Vec::new();
        bindings.write(&mut text);
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool writes exactly the committed headers (which the golden test
    /// holds to the sources), so a script using it sees what a developer would.
    #[test]
    fn writes_the_committed_headers() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = std::env::temp_dir().join(format!("xdal-abi-headers-{}", std::process::id()));
        write_headers(&root, &out).expect("headers are generated");
        for (name, _, _) in HEADERS {
            let written = std::fs::read_to_string(out.join(name)).unwrap();
            let committed = std::fs::read_to_string(root.join("include/xdal").join(name)).unwrap();
            assert!(written == committed, "xdal-abi headers and include/xdal/{name} differ");
        }
        std::fs::remove_dir_all(&out).ok();
    }
}
