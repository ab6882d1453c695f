//! The committed headers must be exactly what cbindgen makes of the Rust
//! sources now. Run with `XDAL_BLESS=1` to rewrite them after a change.
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn generate(crate_dir: &Path, config: &Path) -> String {
    let config = cbindgen::Config::from_file(config).expect("read cbindgen config");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8 header")
}

fn check(header: &str, crate_dir: PathBuf, config: PathBuf) {
    let path = root().join("include/xdal").join(header);
    let generated = generate(&crate_dir, &config);
    if std::env::var_os("XDAL_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write header");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/xdal/{header} is stale: regenerate it with `XDAL_BLESS=1 cargo test --test headers` and commit it"
    );
}

#[test]
fn xdal_h_matches_the_sources() {
    check("xdal.h", root(), root().join("cbindgen.toml"));
}

#[test]
fn xdal_backend_h_matches_the_sources() {
    check("xdal_backend.h", root().join("abi"), root().join("abi/cbindgen-backend.toml"));
}
