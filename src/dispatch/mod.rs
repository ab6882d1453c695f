//! The common path of every operation the table may leave empty: each
//! function here calls the backend's entry when it has one (`call_or!`),
//! and otherwise builds the operation from the backend's required entries
//! alone, as documented entry by entry in xdal_backend.h. Whatever cannot
//! be built that way stays `XDAL_ERROR_NOT_SUPPORTED` (the `call!` default).
pub(crate) mod device;
pub(crate) mod event;
pub(crate) mod memory;
pub(crate) mod stats;
pub(crate) mod stream;
