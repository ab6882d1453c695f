//! What every built-in backend's table needs alike, written once: a
//! failure (a status and a message) and the per-thread message the front
//! fetches through `last_error_message`; the panic boundary each entry runs
//! in; the checks of the table getter; native handles that are `Arc`s
//! turned raw, and the entries of streams, events, modules and functions
//! for backends whose handles are such (`objects`); the strided built-ins'
//! index space, so that every backend refuses the same shapes; the
//! catalogue of built-in kernels by name; the device backends' built-in
//! kernels (their source, names, argument layouts and host-side checks:
//! `kernels`); how to give overlapping copies memmove's result with copies
//! that may not overlap; the one rule for reading settings from the
//! environment; the clock of every timestamp; the per-thread mark of a
//! caller's callback running (`callback`); the check of a path a user gives
//! before anything opens it (`user_path`). A backend crate keeps only what
//! is its own.
pub mod callback;
mod catalogue;
pub mod clock;
pub mod env;
mod error;
mod getter;
mod handle;
pub mod kernels;
pub mod objects;
pub mod overlap;
pub mod strided;
pub mod user_path;

pub use catalogue::Catalogue;
pub use error::{entry, last_message, panic_text, BackendResult, Failure};
pub use getter::hand_out_table;
pub use handle::{arc_from_handle, arc_into_handle, arc_ref};

#[doc(hidden)]
pub use xdal_abi as __abi;
