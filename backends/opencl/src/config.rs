//! Settings from the environment.
//!
//! `XDAL_OPENCL_DEVICES=N`: how many xdal devices to offer. When the
//! platform has fewer SVM devices than that, the first one is split into N
//! sub-devices of equal compute units (PoCL's CPU device splits, so one
//! machine gives the two devices the multi-device tests want). Unset: two
//! where the first device can be split in two, else one.
use xdal_backend_support::env;

pub(crate) struct Config {
    /// The number asked for, or None for the default.
    pub device_count: Option<usize>,
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        Ok(Config { device_count: device_count(env::var("XDAL_OPENCL_DEVICES").as_deref())? })
    }
}

/// `XDAL_OPENCL_DEVICES`'s value read: a number from 1 to 64, or None when
/// not set (unset, empty or blank).
fn device_count(value: Option<&str>) -> Result<Option<usize>, String> {
    let Some(text) = value else { return Ok(None) };
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => Ok(Some(n)),
        _ => Err(format!("XDAL_OPENCL_DEVICES={text:?}: expected a number of devices from 1 to 64")),
    }
}

#[cfg(test)]
mod tests {
    use super::device_count;

    #[test]
    fn the_device_count_is_a_number_from_1_to_64_or_unset() {
        assert_eq!(device_count(None), Ok(None));
        assert_eq!(device_count(Some("2")), Ok(Some(2)));
        assert_eq!(device_count(Some(" 64 ")), Ok(Some(64)));
        for bad in ["0", "65", "-1", "two"] {
            let err = device_count(Some(bad)).unwrap_err();
            assert!(err.starts_with("XDAL_OPENCL_DEVICES=") && err.contains("from 1 to 64"), "{err}");
        }
    }
}
