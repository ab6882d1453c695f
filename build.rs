//! Gives libxdal.so its SONAME, so that consumers record `libxdal.so.1`
//! and a later 1.x library replaces it without relinking.
fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libxdal.so.{major}");
    println!("cargo:rerun-if-changed=build.rs");
}
