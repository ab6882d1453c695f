//! Libraries opened by a path a user gives (a backend plugin in
//! `XDAL_BACKEND`, a CUDA driver in `XDAL_CUDA_DRIVER`): `dlopen` opens a
//! FIFO and waits for a writer for ever, and reads a device such as
//! `/dev/zero` without end, so a path must name a regular file (or a link
//! to one) before it is handed to the loader.

/// Why `path` cannot be a library, if it names something that is not a
/// regular file. A bare file name (no `/`) is the loader's to search for,
/// and a path that does not exist is the loader's to report: both pass.
pub fn not_a_library_file(path: &str) -> Option<String> {
    if !path.contains('/') {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return None;
    }
    let kind = if meta.is_dir() { "a directory" } else { "a device, FIFO or socket" };
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
}
