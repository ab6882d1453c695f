//! The xdal OpenCL backend: the devices of one OpenCL platform that offer
//! shared virtual memory (SVM), reached by the front only through its
//! `xdal_backend_v1_t` table.
//!
//! The OpenCL runtime is opened at run time (libOpenCL.so.1, through cl3's
//! dynamic loading): without one, or without a platform or an SVM device,
//! the backend reports `XDAL_ERROR_BACKEND_UNAVAILABLE` saying what is
//! missing. Device pointers are SVM pointers, so users may offset them as
//! any xdal device pointer; every stream is an in-order command queue.
mod builtin;
mod command;
mod config;
mod device;
mod error;
mod event;
mod memory;
mod module;
mod program;
mod stream;
mod table;
mod timing;

pub use table::xdal_opencl_backend_get_v1;

use device::{discover, ClDevice};
use std::sync::OnceLock;

pub(crate) struct OpenCl {
    pub devices: Vec<ClDevice>,
    /// One context for all devices, so that every SVM pointer is valid on each.
    pub context: device::Context,
}

static OPENCL: OnceLock<Result<OpenCl, String>> = OnceLock::new();

impl OpenCl {
    fn start() -> Result<OpenCl, String> {
        let config = config::Config::from_env()?;
        let (context, devices) = discover(&config)?;
        Ok(OpenCl { devices, context })
    }

    pub fn device(&self, index: usize) -> &ClDevice {
        &self.devices[index]
    }
}

/// Starts the backend once; later calls return the same outcome.
fn started() -> Result<&'static OpenCl, &'static str> {
    OPENCL.get_or_init(OpenCl::start).as_ref().map_err(String::as_str)
}

/// The started backend. The front calls no entry but `device_get_count`
/// before that one has succeeded, so this cannot fail there.
pub(crate) fn opencl() -> &'static OpenCl {
    started().expect("OpenCL backend entry called before a successful start")
}
