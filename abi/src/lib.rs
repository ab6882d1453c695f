//! The xdal C ABI, as Rust types: every `#[repr(C)]` struct, status code,
//! version constant and the backend table. No logic lives here; cbindgen
//! reads these definitions (through the root crate) to write
//! `include/xdal/xdal.h` and `include/xdal/xdal_backend.h`. The only code is
//! `write_sized`, the callee side of the `struct_size` rule.
//!
//! Names follow the C spelling on purpose, so that the header, the Rust code
//! and the documentation all use one name for one thing.
#![allow(non_camel_case_types)]
#![no_std]
// Integers cross the ABI as C types: a narrowing or sign-dropping cast must
// be a checked conversion, or say why it cannot lose anything.
#![warn(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

pub mod backend;
pub mod device;
pub mod extensible;
pub mod graph;
pub mod handles;
pub mod kernel;
pub mod memory;
pub mod status;
pub mod stream;
pub mod trace;
pub mod version;

pub use backend::*;
pub use device::*;
pub use extensible::write_sized;
pub use graph::*;
pub use handles::*;
pub use kernel::*;
pub use memory::*;
pub use status::*;
pub use stream::*;
pub use trace::*;
pub use version::*;
