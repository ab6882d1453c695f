//! Stream and event flags.

/// `xdal_stream_create` flag: an ordinary stream. Streams never synchronize
/// implicitly with each other, the default stream included.
pub const XDAL_STREAM_DEFAULT: u32 = 0x0;
/// `xdal_stream_create` flag, accepted for CUDA familiarity: every xdal
/// stream is already non-blocking with respect to the default stream.
pub const XDAL_STREAM_NON_BLOCKING: u32 = 0x1;
/// Every flag `xdal_stream_create` accepts; any other bit is
/// `XDAL_ERROR_INVALID_VALUE`.
pub const XDAL_STREAM_FLAGS_ALL: u32 = XDAL_STREAM_NON_BLOCKING;

/// `xdal_event_create` flag: timing enabled.
pub const XDAL_EVENT_DEFAULT: u32 = 0x0;
/// `xdal_event_create` flag: no timestamps; `xdal_event_elapsed_time` on
/// such an event is `XDAL_ERROR_INVALID_VALUE`.
pub const XDAL_EVENT_DISABLE_TIMING: u32 = 0x1;
/// Every flag `xdal_event_create` accepts; any other bit is
/// `XDAL_ERROR_INVALID_VALUE`.
pub const XDAL_EVENT_FLAGS_ALL: u32 = XDAL_EVENT_DISABLE_TIMING;
