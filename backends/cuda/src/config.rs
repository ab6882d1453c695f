//! Settings from the environment.
//!
//! `XDAL_CUDA_DRIVER=<path>`: the CUDA driver library to open instead of
//! `libcuda.so.1` (found by the dynamic loader's usual search). Tests point
//! it at a stub driver or at a file that does not exist.
use xdal_backend_support::env;

/// The library opened when `XDAL_CUDA_DRIVER` is not set.
pub(crate) const DEFAULT_DRIVER: &str = "libcuda.so.1";

pub(crate) struct Config {
    /// The driver library's path or file name.
    pub driver_path: String,
}

impl Config {
    pub fn from_env() -> Config {
        Config { driver_path: driver_path(env::var("XDAL_CUDA_DRIVER")) }
    }
}

fn driver_path(value: Option<String>) -> String {
    value.unwrap_or_else(|| DEFAULT_DRIVER.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_is_libcuda_unless_named() {
        assert_eq!(driver_path(None), "libcuda.so.1");
        assert_eq!(driver_path(Some("/opt/stub/libcuda.so".into())), "/opt/stub/libcuda.so");
    }
}
