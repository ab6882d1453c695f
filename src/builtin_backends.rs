//! The backends compiled into this library: the one list that backend
//! selection (`XDAL_BACKEND=<name>`), its error messages, xdal-info and the
//! README's table read. Each is reached through the same getter signature a
//! plugin exports, so the front knows it only through its table; adding a
//! backend crate is one line in `BUILTIN_BACKENDS`.
use xdal_abi::{xdal_backend_v1_t, xdal_status_raw};

/// A backend's table getter, as `xdal_backend_get_v1` is declared in
/// xdal_backend.h.
pub(crate) type Getter = unsafe extern "C" fn(u32, u32, *mut *const xdal_backend_v1_t) -> xdal_status_raw;

/// One backend built into libxdal.
pub struct BuiltinBackend {
    /// The name `XDAL_BACKEND` selects it by, and the name its table gives.
    pub name: &'static str,
    /// What it runs on, in a few words, for xdal-info and the README.
    pub runs_on: &'static str,
    pub(crate) getter: Getter,
    /// Whether it marks the threads running callers' host functions itself
    /// (`xdal_backend_support::callback`), so that the front need not wrap
    /// each one in a trampoline (an allocation and an indirection a call).
    pub(crate) marks_host_functions: bool,
    /// Whether a `fork()` child may go on using it (`crate::fork`).
    pub(crate) survives_fork: bool,
}

/// Every built-in backend, the default first. Each is behind the cargo
/// feature of its name (all on by default).
pub static BUILTIN_BACKENDS: &[BuiltinBackend] = &[
    #[cfg(feature = "fake")]
    BuiltinBackend {
        name: "fake",
        runs_on: "devices simulated on the CPU",
        getter: xdal_fake::xdal_fake_backend_get_v1,
        marks_host_functions: true,
        survives_fork: true,
    },
    #[cfg(feature = "opencl")]
    BuiltinBackend {
        name: "opencl",
        runs_on: "OpenCL devices with shared virtual memory (PoCL in CI)",
        getter: xdal_opencl::xdal_opencl_backend_get_v1,
        marks_host_functions: true,
        survives_fork: false,
    },
    #[cfg(feature = "cuda")]
    BuiltinBackend {
        name: "cuda",
        runs_on: "NVIDIA GPUs through the CUDA driver API",
        getter: xdal_cuda::xdal_cuda_backend_get_v1,
        marks_host_functions: false,
        survives_fork: false,
    },
];

/// The backend used when nothing else is chosen or linked in; none in a
/// build without built-in backends.
pub(crate) fn default_backend() -> Option<&'static BuiltinBackend> {
    BUILTIN_BACKENDS.first()
}

/// The built-in backend called `name`.
pub(crate) fn find(name: &str) -> Option<&'static BuiltinBackend> {
    BUILTIN_BACKENDS.iter().find(|b| b.name == name)
}

/// The built-in names as a message lists them: "fake, opencl, cuda", or
/// "none".
pub(crate) fn names() -> String {
    if BUILTIN_BACKENDS.is_empty() {
        return "none".to_string();
    }
    BUILTIN_BACKENDS.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
}

#[cfg(all(test, feature = "fake"))]
mod tests {
    use super::*;

    /// The README's table of built-in backends is the list, row for row.
    #[test]
    fn the_readme_lists_exactly_the_built_in_backends() {
        let readme = include_str!("../README.md");
        let section =
            readme.split("\n## Built-in backends\n").nth(1).expect("README has a 'Built-in backends' section");
        let rows: Vec<(&str, &str)> = section
            .lines()
            .take_while(|line| !line.starts_with("## "))
            .filter(|line| line.starts_with("| `"))
            .map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                (cells[1].trim_matches('`'), cells[2])
            })
            .collect();
        let listed: Vec<(&str, &str)> = BUILTIN_BACKENDS.iter().map(|b| (b.name, b.runs_on)).collect();
        assert_eq!(rows, listed, "README.md's built-in backends table must match BUILTIN_BACKENDS");
    }

    #[test]
    fn names_are_unique_and_found() {
        for backend in BUILTIN_BACKENDS {
            assert!(std::ptr::eq(find(backend.name).unwrap(), backend), "{} is listed twice", backend.name);
        }
        assert!(find("none-such").is_none());
        assert_eq!(default_backend().map(|b| b.name), Some("fake"));
    }
}
