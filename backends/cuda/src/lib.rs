//! The xdal CUDA backend: NVIDIA GPUs through the CUDA driver API, reached
//! by the front only through its `xdal_backend_v1_t` table.
//!
//! The driver (`libcuda.so.1`, or `XDAL_CUDA_DRIVER`) is opened at run time
//! (driver.rs): without one, with one older than CUDA 12.0, with one whose
//! `cuInit` fails or that sees no device, every call reports
//! `XDAL_ERROR_BACKEND_UNAVAILABLE` saying what is missing. Each xdal device
//! is a CUDA device and its primary context, made current on the calling
//! thread before each driver call that needs it. Device pointers are CUDA's
//! unified addresses, so users may offset them as any xdal device pointer.
mod builtin;
mod config;
mod device;
mod driver;
mod error;
mod event;
mod graph;
mod memory;
mod module;
mod stream;
mod table;
mod timing;

pub use table::xdal_cuda_backend_get_v1;

use device::Device;
use driver::{Api, Driver};
use std::sync::OnceLock;

pub(crate) struct Cuda {
    pub driver: Driver,
    pub devices: Vec<Device>,
}

static CUDA: OnceLock<Result<Cuda, String>> = OnceLock::new();

impl Cuda {
    fn start() -> Result<Cuda, String> {
        let config = config::Config::from_env();
        let driver = Driver::open(&config.driver_path)?;
        let devices = device::discover(&driver)?;
        Ok(Cuda { driver, devices })
    }

    pub fn device(&self, index: usize) -> &Device {
        &self.devices[index]
    }
}

/// Starts the backend once; later calls return the same outcome.
fn started() -> Result<&'static Cuda, &'static str> {
    CUDA.get_or_init(Cuda::start).as_ref().map_err(String::as_str)
}

/// The started backend. The front calls no entry but `device_get_count`
/// before that one has succeeded, so this cannot fail there.
pub(crate) fn cuda() -> &'static Cuda {
    started().expect("CUDA backend entry called before a successful start")
}

/// The driver's entry points (of the started backend).
pub(crate) fn api() -> &'static Api {
    &cuda().driver.api
}
