//! The xdal fake backend: devices, memory, streams and events simulated on
//! the CPU, reached by the front only through its `xdal_backend_v1_t` table,
//! exactly as a plugin would be.
//!
//! Settings come from the environment (see `config.rs`). Device memory is a
//! lazily backed address range per device; streams run on a small executor
//! shared by the whole process; events are points in a stream's sequence of
//! operations.
mod addr_map;
mod builtin;
mod config;
mod device;
mod dtype;
mod error;
mod event;
mod executor;
mod faults;
mod graph;
mod heap;
mod hot;
mod launch;
mod lock;
mod module;
mod pool;
mod region;
mod stream;
mod stream_state;
mod table;
#[cfg(test)]
mod tests;
mod tuning;

pub use table::xdal_fake_backend_get_v1;

/// Every built-in kernel of `xdal_module_get_builtin`, in the catalogue's
/// order: its name and the exact byte size of each argument. The names and
/// sizes are ABI (docs/abi-policy.md): `xdal-abi check` compares them with
/// each baseline's, which were recorded from this list.
pub fn builtin_kernels() -> impl Iterator<Item = (&'static str, &'static [usize])> {
    builtin::all().map(|b| (b.name.as_str(), b.arg_sizes.as_slice()))
}

use config::Config;
use device::FakeDevice;
use executor::Executor;
use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;

pub(crate) struct Fake {
    pub config: Config,
    /// What `XDAL_FAKE_FAULTS` or `xdal_debug_set_faults` asked to fail.
    pub faults: faults::Faults,
    pub devices: Vec<FakeDevice>,
    pub executor: Executor,
    pub next_id: AtomicU64,
}

static FAKE: OnceLock<Result<Fake, String>> = OnceLock::new();

impl Fake {
    fn start() -> Result<Fake, String> {
        let config = Config::from_env()?;
        let devices = (0..config.device_count)
            .map(|i| FakeDevice::new(i, &config).map_err(|f| format!("device {i}: {}", f.message)))
            .collect::<Result<Vec<_>, _>>()?;
        let faults = faults::Faults::new(config.faults.clone());
        Ok(Fake { executor: Executor::new(config.workers), devices, faults, config, next_id: AtomicU64::new(1) })
    }

    pub fn device(&self, index: usize) -> &FakeDevice {
        &self.devices[index]
    }

    /// The backend-side address of a user address: the alias for device
    /// memory in protect mode, the address itself otherwise.
    #[inline]
    pub fn alias(&self, addr: usize) -> usize {
        if !self.config.protect {
            return addr;
        }
        self.devices.iter().find(|d| d.region.contains(addr)).map_or(addr, |d| d.region.alias_of(addr))
    }
}

/// Starts the backend once; later calls return the same outcome.
fn started() -> Result<&'static Fake, &'static str> {
    FAKE.get_or_init(Fake::start).as_ref().map_err(String::as_str)
}

/// The started backend. The front calls no entry but `device_get_count`
/// before that one has succeeded, so this cannot fail there.
pub(crate) fn fake() -> &'static Fake {
    started().expect("fake backend entry called before a successful start")
}
