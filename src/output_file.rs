//! Files xdal writes at a caller's request (`xdal_graph_debug_dump`'s DOT
//! file, `XDAL_TRACE`'s trace): written without ever blocking on the path
//! itself. A FIFO without a reader would make a plain open wait for one
//! for ever (at exit, too, for the trace); opened non-blocking it fails at
//! once with ENXIO instead, while a FIFO with a reader, or a regular file,
//! is written as usual.
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// Writes `bytes` to `path` (created, or truncated).
pub(crate) fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // The open is what must not wait; writes may (a FIFO's reader drains
    // it), so the descriptor goes back to blocking mode.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    // SAFETY: a descriptor this function owns, open for the call.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above; clearing O_NONBLOCK on a valid descriptor.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_without_a_reader_is_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("xdal-output-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let error = write(&fifo, b"x").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENXIO), "{error}");
        let file = dir.join("file");
        write(&file, b"first, longer").unwrap();
        write(&file, b"second").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"second", "truncated, then written");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
