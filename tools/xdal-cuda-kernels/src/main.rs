//! `xdal-cuda-kernels DIR`: writes the CUDA C++ source of every built-in
//! kernel program into `DIR` (created if missing), as `<stem>.cu` with the
//! stem the CUDA backend loads its PTX by (`f32.cu` for `f32.ptx`), and
//! prints the paths written. tools/cuda-ptx.sh compiles them with NVRTC.
use std::path::PathBuf;
use std::process::ExitCode;
use xdal_backend_support::kernels::{cuda_program, program_count, program_stem};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), None) = (args.next(), args.next()) else {
        eprintln!("usage: xdal-cuda-kernels DIR");
        return ExitCode::from(2);
    };
    let dir = PathBuf::from(dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("xdal-cuda-kernels: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    for program in 0..program_count() {
        let path = dir.join(format!("{}.cu", program_stem(program)));
        if let Err(e) = std::fs::write(&path, cuda_program(program)) {
            eprintln!("xdal-cuda-kernels: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("{}", path.display());
    }
    ExitCode::SUCCESS
}
