//! How the fake backend reports failure: the shared failure type and
//! panic boundary (xdal-backend-support), under the fake's names.
use xdal_abi::xdal_status_raw;
pub(crate) use xdal_backend_support::{failure, last_message, panic_text, Failure};

pub(crate) type FakeResult<T> = Result<T, Failure>;

/// Runs a table entry's body inside the panic boundary.
pub(crate) fn entry(body: impl FnOnce() -> FakeResult<()>) -> xdal_status_raw {
    xdal_backend_support::entry("fake", body)
}
