//! xdal: a device abstraction layer with a stable, versioned C ABI.
//!
//! This crate is the front: the exported C functions (in `api/`), argument
//! checks, handle tables, the registry of live allocations, per-thread
//! state, and the loading of the backend, which it reaches only through the
//! `xdal_backend_v1_t` table. See docs/architecture.md for the path of one
//! call.
//!
//! Every export runs inside `error::boundary`, so no panic crosses into C.
#![allow(non_camel_case_types)]
// Integers cross the ABI as C types: a narrowing or sign-dropping cast must
// be a checked conversion, or say why it cannot lose anything.
#![warn(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

mod api;
mod backend;
mod builtin_args;
mod builtin_backends;
mod dispatch;
mod error;
mod fork;
mod graph;
mod handles;
mod lock;
mod objects;
mod observe;
mod output_file;
mod registry;
mod threads;
mod trace;
mod validate;

pub use api::*;
#[doc(hidden)]
pub use backend::required_entries as required_backend_entries;
pub use builtin_backends::{BuiltinBackend, BUILTIN_BACKENDS};
pub use xdal_abi as abi;
