//! OpenCL programs, built for every device of the backend's context from
//! OpenCL C source or a program binary, and an optional build cache on
//! disk for runtimes that keep none of their own: with
//! `XDAL_OPENCL_CACHE_DIR` set, the binaries of each program built from
//! source are kept there, keyed by the source, the build options and the
//! devices' identity.
//!
//! The cache is off unless asked for because fetching a program's binaries
//! makes PoCL compile every kernel of the program for every device at
//! once: about ten times the build (48 s against 4.6 s for a built-in
//! program of 65 kernels on two sub-devices), where PoCL's own cache
//! (`POCL_CACHE_DIR`), kernel by kernel, already serves a second process
//! the same program in about 40 ms. The cache is an optimisation only: an
//! entry that cannot be read, written or loaded is rebuilt from source.
use crate::error::{failure, ClCall, ClResult};
use cl3::types::{cl_device_id, cl_program};
use std::collections::VecDeque;
use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Options every program is built with: kernel argument information, which
/// launches read to tell SVM pointers from values.
const OPTIONS: &str = "-cl-kernel-arg-info";

/// A built program; holds one reference.
pub(crate) struct Program(pub cl_program);

// SAFETY: OpenCL programs are thread-safe by the specification.
unsafe impl Send for Program {}
// SAFETY: as above.
unsafe impl Sync for Program {}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: this object owned one reference; it gives it up here.
        let _ = unsafe { cl3::program::release_program(self.0) };
    }
}

fn devices() -> Vec<cl_device_id> {
    crate::opencl().devices.iter().map(|d| d.id).collect()
}

/// Builds `program` for `devices`; a failed build is `XDAL_ERROR_INVALID_VALUE`
/// with the compiler's log.
fn build(program: Program, devices: &[cl_device_id], what: &str) -> ClResult<Program> {
    let options = CString::new(OPTIONS).expect("no NUL in the options");
    match cl3::program::build_program(program.0, devices, &options, None, std::ptr::null_mut()) {
        Ok(()) => Ok(program),
        Err(code) => {
            let log = devices
                .first()
                .and_then(|&d| {
                    cl3::program::get_program_build_info(program.0, d, cl3::program::CL_PROGRAM_BUILD_LOG).ok()
                })
                .map(|info| String::from(info).trim_end_matches('\0').trim().to_string())
                .unwrap_or_default();
            Err(failure!(
                XDAL_ERROR_INVALID_VALUE,
                "{what} does not build (OpenCL error {code}, {}): {log}",
                cl3::error_codes::error_text(code)
            ))
        }
    }
}

/// A program built from OpenCL C `source`, from the disk cache when it
/// holds it.
pub(crate) fn from_source(source: &str, what: &str) -> ClResult<Program> {
    from_source_cached_in(source, what, cache_dir())
}

/// Programs built from source lately, most recent last: a module loaded
/// again from the same source (a framework reloading its kernels, a test
/// per case) shares the built program, as CUDA's driver serves a PTX it
/// compiled before from its cache. PoCL runs its compiler's front end on
/// every build from source, cached or not (about 30 ms for a one-line
/// kernel), so only xdal can make the second load cheap.
static RECENT_SOURCES: Mutex<VecDeque<(String, Arc<Program>)>> = Mutex::new(VecDeque::new());

/// How many built programs `RECENT_SOURCES` keeps alive after their
/// modules are unloaded: a bound on the memory a process that loads many
/// sources once each leaves behind.
const RECENT_SOURCES_KEPT: usize = 16;

/// `from_source`, sharing the program of a recent load of the same source.
pub(crate) fn from_source_shared(source: &str, what: &str) -> ClResult<Arc<Program>> {
    let recent = || RECENT_SOURCES.lock().unwrap_or_else(|p| p.into_inner());
    {
        let mut recent = recent();
        if let Some(i) = recent.iter().position(|(s, _)| s == source) {
            let entry = recent.remove(i).expect("a found index");
            let program = entry.1.clone();
            recent.push_back(entry);
            return Ok(program);
        }
    }
    // Built outside the lock: another thread's load of another source does
    // not wait for this one. Two threads building one source at once each
    // build it; the later one's program is kept.
    let program = Arc::new(from_source(source, what)?);
    let mut recent = recent();
    recent.retain(|(s, _)| s != source);
    if recent.len() == RECENT_SOURCES_KEPT {
        recent.pop_front();
    }
    recent.push_back((source.to_string(), program.clone()));
    Ok(program)
}

/// `from_source` with the cache in `dir` (None: no disk cache).
fn from_source_cached_in(source: &str, what: &str, dir: Option<PathBuf>) -> ClResult<Program> {
    let devices = devices();
    let key = dir.map(|dir| cache_key(dir, source, &devices));
    if let Some(program) = key.as_ref().and_then(|k| cached(k, &devices)) {
        return Ok(program);
    }
    let program = Program(cl3::program::create_program_with_source(crate::opencl().context.0, &[source]).cl(what)?);
    let program = build(program, &devices, what)?;
    if let Some(key) = key {
        store(&key, &program);
    }
    Ok(program)
}

/// A program from a binary the runtime gave for this kind of device (the
/// same binary for every device of the context).
pub(crate) fn from_binary(binary: &[u8], what: &str) -> ClResult<Program> {
    let devices = devices();
    let binaries = vec![binary; devices.len()];
    with_binaries(&devices, &binaries, what)
}

fn with_binaries(devices: &[cl_device_id], binaries: &[&[u8]], what: &str) -> ClResult<Program> {
    let context = crate::opencl().context.0;
    // SAFETY: every device belongs to the context; one binary per device.
    let program = unsafe { cl3::program::create_program_with_binary(context, devices, binaries) }.map_err(|code| {
        failure!(
            XDAL_ERROR_INVALID_VALUE,
            "{what} is not a program binary for this device (OpenCL error {code}, {})",
            cl3::error_codes::error_text(code)
        )
    })?;
    build(Program(program), devices, what)
}

/// The program's binaries, one per device, in the order of its devices.
fn binaries(program: &Program) -> Option<Vec<Vec<u8>>> {
    match cl3::program::get_program_info(program.0, cl3::program::CL_PROGRAM_BINARIES).ok()? {
        cl3::info_type::InfoType::VecVecUchar(v) => Some(v),
        _ => None,
    }
}

/// The file an entry lives in: the directory and a key naming what was
/// built for which devices and runtime.
struct CacheKey {
    path: PathBuf,
    /// Written at the head of the file and compared on reading, so that a
    /// hash collision or a stale file is a miss, never a wrong program.
    identity: String,
}

/// `XDAL_OPENCL_CACHE_DIR`, when set and not empty.
fn cache_dir() -> Option<PathBuf> {
    xdal_backend_support::env::var("XDAL_OPENCL_CACHE_DIR").map(PathBuf::from)
}

fn device_text(id: cl_device_id, what: u32) -> String {
    cl3::device::get_device_info(id, what).map(String::from).unwrap_or_default().trim_end_matches('\0').to_string()
}

fn cache_key(dir: PathBuf, source: &str, devices: &[cl_device_id]) -> CacheKey {
    let mut identity = format!("xdal-opencl program cache 1\noptions {OPTIONS}\nsource bytes {}\n", source.len());
    for &d in devices {
        for what in [cl3::device::CL_DEVICE_NAME, cl3::device::CL_DEVICE_VERSION, cl3::device::CL_DRIVER_VERSION] {
            identity.push_str(&device_text(d, what));
            identity.push('\n');
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    identity.hash(&mut hasher);
    source.hash(&mut hasher);
    CacheKey { path: dir.join(format!("{:016x}.clbin", hasher.finish())), identity }
}

/// The cached program, when the entry exists, matches and loads.
fn cached(key: &CacheKey, devices: &[cl_device_id]) -> Option<Program> {
    let bytes = std::fs::read(&key.path).ok()?;
    let mut rest = bytes.strip_prefix(key.identity.as_bytes())?;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let count = u64::from_le_bytes(take(8)?.try_into().ok()?) as usize;
    let mut binaries = Vec::with_capacity(count);
    for _ in 0..count {
        let len = u64::from_le_bytes(take(8)?.try_into().ok()?) as usize;
        binaries.push(take(len)?);
    }
    // A runtime may report one binary for sub-devices of one device (PoCL
    // does): it serves them all.
    if count == 1 {
        binaries = vec![binaries[0]; devices.len()];
    } else if count != devices.len() {
        return None;
    }
    with_binaries(devices, &binaries, "a cached program").ok()
}

/// Writes the program's binaries to the cache; a failure leaves no entry.
fn store(key: &CacheKey, program: &Program) {
    let Some(binaries) = binaries(program) else { return };
    if binaries.iter().any(Vec::is_empty) {
        return;
    }
    let mut bytes = key.identity.as_bytes().to_vec();
    bytes.extend((binaries.len() as u64).to_le_bytes());
    for b in &binaries {
        bytes.extend((b.len() as u64).to_le_bytes());
        bytes.extend(b);
    }
    // Written aside and renamed, so that a process reading meanwhile sees
    // the whole entry or none.
    let Some(dir) = key.path.parent() else { return };
    let aside = key.path.with_extension(format!("tmp{}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&aside, &bytes))
        .and_then(|()| std::fs::rename(&aside, &key.path));
    if written.is_err() {
        let _ = std::fs::remove_file(&aside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "__kernel void twice(__global int *x) { x[get_global_id(0)] *= 2; }";

    fn entries(dir: &std::path::Path) -> Vec<PathBuf> {
        std::fs::read_dir(dir).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default()
    }

    #[test]
    fn a_source_loaded_again_shares_its_built_program_until_pushed_out() {
        if crate::started().is_err() {
            return; // no OpenCL here: the backend's own tests say so
        }
        let source = |i: usize| format!("// sharing test {i}\n{SOURCE}");
        let first = from_source_shared(&source(0), "test").unwrap();
        let again = from_source_shared(&source(0), "test").unwrap();
        assert_eq!(first.0, again.0, "the same source gives the program built before");
        drop((first, again));
        let kept = from_source_shared(&source(0), "test").unwrap().0;
        assert_eq!(from_source_shared(&source(0), "test").unwrap().0, kept, "kept after its modules are gone");
        for i in 1..=RECENT_SOURCES_KEPT {
            from_source_shared(&source(i), "test").unwrap();
        }
        let rebuilt = from_source_shared(&source(0), "test").unwrap();
        assert!(
            RECENT_SOURCES.lock().unwrap().iter().filter(|(s, _)| *s == source(0)).count() == 1,
            "one entry per source"
        );
        assert_eq!(RECENT_SOURCES.lock().unwrap().len(), RECENT_SOURCES_KEPT, "the oldest was pushed out, not more");
        drop(rebuilt);
    }

    #[test]
    fn a_built_program_is_kept_on_disk_and_a_damaged_entry_is_rebuilt() {
        if crate::started().is_err() {
            return; // no OpenCL here: the backend's own tests say so
        }
        let dir = std::env::temp_dir().join(format!("xdal-opencl-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        from_source_cached_in(SOURCE, "test", Some(dir.clone())).unwrap();
        let files = entries(&dir);
        assert_eq!(files.len(), 1, "one entry: {files:?}");
        let key = cache_key(dir.clone(), SOURCE, &devices());
        assert_eq!(files[0], key.path);
        assert!(cached(&key, &devices()).is_some(), "the entry loads");

        // A damaged entry is a miss, and the rebuild replaces it.
        let mut bytes = std::fs::read(&key.path).unwrap();
        let len = bytes.len();
        bytes.truncate(len - 10);
        std::fs::write(&key.path, &bytes).unwrap();
        assert!(cached(&key, &devices()).is_none());
        from_source_cached_in(SOURCE, "test", Some(dir.clone())).unwrap();
        assert!(cached(&key, &devices()).is_some());

        // Another source is another entry; nothing else is left behind.
        from_source_cached_in("__kernel void k(__global int *x) { x[0] = 1; }", "test", Some(dir.clone())).unwrap();
        assert_eq!(entries(&dir).len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
