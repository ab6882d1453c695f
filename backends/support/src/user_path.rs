//! Paths a user gives to be opened (a module file, a backend plugin in
//! `XDAL_BACKEND`, a CUDA driver in `XDAL_CUDA_DRIVER`): opening a FIFO
//! waits for a writer for ever, and reading a device such as `/dev/zero`
//! never ends, in `dlopen` and in any loader, so a path must name a
//! regular file (or a link to one) before it is opened.

/// A C path as the system's path: its bytes as they are, UTF-8 or not.
pub fn from_c(path: &std::ffi::CStr) -> &std::path::Path {
    std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path.to_bytes()))
}

/// What `meta` names, where it is not a regular file.
pub fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.is_file() {
        None
    } else if meta.is_dir() {
        Some("a directory")
    } else {
        Some("a device, FIFO or socket")
    }
}

/// Why `path` cannot be a library, if it names something that is not a
/// regular file. A bare file name (no `/`) is the loader's to search for,
/// and a path that does not exist is the loader's to report: both pass.
pub fn not_a_library_file(path: &str) -> Option<String> {
    if !path.contains('/') {
        return None;
    }
    let kind = not_regular(&std::fs::metadata(path).ok()?)?;
    Some(format!("{path} is {kind}, not a library file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_go_to_the_loader() {
        assert_eq!(not_a_library_file("libcuda.so.1"), None, "searched for by the loader");
        assert_eq!(not_a_library_file("/no/such/file.so"), None, "reported by the loader");
        let this = std::env::current_exe().unwrap();
        assert_eq!(not_a_library_file(this.to_str().unwrap()), None);
        assert!(not_a_library_file("/dev/zero").unwrap().contains("a device, FIFO or socket"));
        assert!(not_a_library_file("/tmp").unwrap().contains("a directory"));
    }

    #[test]
    fn c_paths_keep_their_bytes() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(from_c(c"dir/caf\xe9.dot").as_os_str().as_bytes(), b"dir/caf\xe9.dot", "not UTF-8, kept as is");
    }
}
