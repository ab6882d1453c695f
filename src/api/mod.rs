//! The exported C functions, one file per section of ABI.md. Each is a thin
//! shell: check arguments, resolve handles and pointers, call the backend
//! table, write outputs on success.
//!
//! The functions are safe `extern "C"` items on purpose: they are called
//! from C, where the pointer contract is the header's documentation, and
//! the front checks what can be checked (NULL, live handles, allocation
//! ranges) before anything is dereferenced.
#![allow(clippy::not_unsafe_ptr_arg_deref)]
pub(crate) mod copy;
mod debug;
mod device;
mod event;
mod graph;
mod kernel;
mod memory;
mod status;
mod stream;
mod trace;

pub use copy::*;
pub use debug::*;
pub use device::*;
pub use event::*;
pub use graph::*;
pub use kernel::*;
pub use memory::*;
pub use status::*;
pub use stream::*;
pub use trace::*;
