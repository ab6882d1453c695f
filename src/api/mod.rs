//! The exported C functions, one file per section of ABI.md. Each is a thin
//! shell: check arguments, resolve handles and pointers, call the backend
//! table, write outputs on success.
mod copy;
mod device;
mod event;
mod memory;
mod status;
mod stream;

pub use copy::*;
pub use device::*;
pub use event::*;
pub use memory::*;
pub use status::*;
pub use stream::*;
