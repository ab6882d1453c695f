//! Gives libxdal.so its SONAME, so that consumers record `libxdal.so.1`
//! and a later 1.x library replaces it without relinking; and compiles the
//! C shim that refers to a linked-in backend's getter as a weak symbol
//! (Rust has no stable weak linkage).
fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libxdal.so.{major}");
    cc::Build::new()
        .file("src/shim/linked_backend.c")
        .flag_if_supported("-std=c11")
        .warnings(true)
        .extra_warnings(true)
        .flag("-Werror")
        .compile("xdal_linked_backend");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/shim/linked_backend.c");
}
