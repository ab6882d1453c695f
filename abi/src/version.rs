//! Version constants. The ABI version moves only by the rules of
//! docs/abi-policy.md: a minor bump adds, a major bump may break.

/// ABI major version: binaries and backends built against another major do
/// not run against this library.
pub const XDAL_ABI_VERSION_MAJOR: u32 = 1;
/// ABI minor version: only additions since the major's first release.
pub const XDAL_ABI_VERSION_MINOR: u32 = 2;
/// Library release, major part (equals the ABI major).
pub const XDAL_VERSION_MAJOR: u32 = 1;
/// Library release, minor part.
pub const XDAL_VERSION_MINOR: u32 = 2;
/// Library release, patch part.
pub const XDAL_VERSION_PATCH: u32 = 0;
