//! The fake backend's settings, read once from the environment.
use crate::faults::Spec;
use xdal_backend_support::env;

/// What `XDAL_FAKE_*` asked for. Documented in the README.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// `XDAL_FAKE_DEVICE_COUNT`: simulated devices, 0 to
    /// `XDAL_MAX_DEVICES` (64; default 2).
    pub device_count: usize,
    /// `XDAL_FAKE_MEMORY_BYTES`: capacity of each device (default 16 GiB);
    /// a byte count with an optional K, M, G or T suffix (powers of 1024).
    pub memory_bytes: usize,
    /// `XDAL_FAKE_PROTECT=1`: device memory is inaccessible to host code.
    pub protect: bool,
    /// `XDAL_FAKE_WORKERS`: executor threads (default: the number of cores).
    pub workers: usize,
    /// `XDAL_FAKE_FAULTS`: the fault-injection spec (faults.rs; default none).
    pub faults: Spec,
    /// `XDAL_FAKE_POISON=1`: new and freed device memory is filled with
    /// 0xFF bytes (NaN for every float type), so that reads of memory
    /// never written, or already freed, show.
    pub poison: bool,
}

const MAX_DEVICES: usize = xdal_abi::XDAL_MAX_DEVICES as usize;
const MIN_MEMORY: usize = 1 << 20;
const MAX_MEMORY: usize = 1 << 44;

impl Config {
    /// Reads the environment; an invalid value is an error naming it.
    pub fn from_env() -> Result<Config, String> {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let device_count = parse_var("XDAL_FAKE_DEVICE_COUNT", 2, parse_count, 0, MAX_DEVICES)?;
        let faults = Spec::parse(&env::var("XDAL_FAKE_FAULTS").unwrap_or_default(), device_count)
            .map_err(|why| format!("XDAL_FAKE_FAULTS is not valid: {why}"))?;
        Ok(Config {
            device_count,
            memory_bytes: parse_var("XDAL_FAKE_MEMORY_BYTES", 16 << 30, parse_bytes, MIN_MEMORY, MAX_MEMORY)?,
            protect: parse_var("XDAL_FAKE_PROTECT", 0, parse_count, 0, 1)? == 1,
            workers: parse_var("XDAL_FAKE_WORKERS", cores.max(2), parse_count, 1, 256)?,
            faults,
            poison: parse_var("XDAL_FAKE_POISON", 0, parse_count, 0, 1)? == 1,
        })
    }
}

fn parse_var(
    name: &str,
    default: usize,
    parse: fn(&str) -> Option<usize>,
    min: usize,
    max: usize,
) -> Result<usize, String> {
    let Some(text) = env::var(name) else {
        return Ok(default);
    };
    match parse(&text) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(format!("{name}={text:?} is not valid: expected a value from {min} to {max}")),
    }
}

fn parse_count(text: &str) -> Option<usize> {
    text.parse().ok()
}

/// "4096", "512M", "16G", "16GiB" -> bytes.
pub(crate) fn parse_bytes(text: &str) -> Option<usize> {
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let value: usize = digits.parse().ok()?;
    let shift = match suffix.trim().to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    value.checked_mul(1usize << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_accept_binary_suffixes() {
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("16G"), Some(16 << 30));
        assert_eq!(parse_bytes("16GiB"), Some(16 << 30));
        assert_eq!(parse_bytes("2k"), Some(2048));
        assert_eq!(parse_bytes("12Q"), None);
        assert_eq!(parse_bytes(""), None);
        assert_eq!(parse_bytes("-1"), None);
    }
}
