//! The built-in kernels' programs as this backend loads them: PTX
//! generated ahead of time from xdal-backend-support's kernel templates
//! (one program per element type), each loaded on a device the first time
//! one of its kernels is asked for there, and kept for the process.
//! What a built-in is called, takes and checks is the catalogue's
//! (`xdal_backend_support::kernels`).
use crate::error::{failure, CuResult};
use crate::module::Image;
use std::sync::{Arc, OnceLock};

/// Threads per block of a built-in's launch.
pub(crate) const BLOCK: u32 = 256;

/// The PTX of each program, in program order; empty until the programs are
/// generated for this backend.
static PTX: &[&str] = &[];

/// Whether the built-ins can run here; the refusal says why not.
pub(crate) fn available() -> CuResult<()> {
    if PTX.len() != xdal_backend_support::kernels::program_count() {
        return Err(failure!(
            XDAL_ERROR_NOT_SUPPORTED,
            "the CUDA backend was built without its built-in kernels' PTX: load kernels with xdal_module_load"
        ));
    }
    Ok(())
}

/// `dtype_mask` of the device properties: the built-ins' types, or none
/// when they are not available.
pub(crate) fn dtype_mask() -> u64 {
    available().map_or(0, |()| xdal_backend_support::kernels::dtype_mask())
}

/// Program `program`'s image, shared by every function of it.
pub(crate) fn image(program: usize) -> CuResult<Arc<Image>> {
    available()?;
    static IMAGES: OnceLock<Vec<OnceLock<Arc<Image>>>> = OnceLock::new();
    let images = IMAGES.get_or_init(|| PTX.iter().map(|_| OnceLock::new()).collect());
    let image = images[program].get_or_init(|| {
        let stem = xdal_backend_support::kernels::program_stem(program);
        Arc::new(Image::new(PTX[program].as_bytes(), format!("built-in program {stem}")))
    });
    Ok(image.clone())
}
