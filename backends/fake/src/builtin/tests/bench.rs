//! Throughput checks, ignored by default since they only mean something in
//! a release build:
//! `cargo test --release -p xdal-fake --lib bench -- --ignored --nocapture`.
//! They print rates next to what plain Rust achieves on the same machine.
use super::*;
use std::time::Instant;

/// The best of five runs of `f`, after one warm-up, in seconds.
fn best_of<F: FnMut()>(mut f: F) -> f64 {
    f();
    (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// Runs kernel `name` as a grid of `blocks` blocks, one thread each.
fn run_blocks(name: &str, blocks: u32, args: &[Vec<u8>]) {
    let kernel = find(name).unwrap().kernel;
    let mut copies = args.to_vec();
    let pointers = ArgPointers(copies.iter_mut().map(|a| a.as_mut_ptr().cast::<c_void>()).collect());
    std::thread::scope(|scope| {
        for index in 0..blocks {
            let pointers = &pointers;
            scope.spawn(move || {
                let ctx = context((blocks, 1, 1), index);
                // SAFETY: a valid context and the kernel's arguments.
                assert_eq!(unsafe { kernel(&ctx, pointers.as_ptr()) }, 0, "{name}");
            });
        }
    });
}

#[test]
#[ignore]
fn bench_memory_speed() {
    let n = 16 << 20; // 64 MiB of f32
    let gb = (n * 4) as f64 / 1e9;
    let (mut a, mut b, mut c) = (Buf::filled(n * 4, 1), Buf::filled(n * 4, 2), Buf::zeroed(n * 4));
    let fill = [c.arg(), u64_arg(n as u64), 1.5f32.to_ne_bytes().to_vec()];
    println!("fill_f32, 2 blocks: {:.1} GB/s", gb / best_of(|| run_blocks("fill_f32", 2, &fill)));
    let memset = best_of(|| {
        let (left, right) = c.bytes_mut().split_at_mut(n * 2);
        std::thread::scope(|s| {
            s.spawn(|| left.fill(7));
            s.spawn(|| right.fill(7));
        });
    });
    println!("memset, 2 threads: {:.1} GB/s", gb / memset);
    let add = [a.arg(), b.arg(), c.arg(), u64_arg(n as u64)];
    println!("add_f32, 2 blocks: {:.1} GB/s", 3.0 * gb / best_of(|| run_blocks("add_f32", 2, &add)));
    let (x, y) = (a.elems::<f32>(n), b.elems::<f32>(n));
    let mut z = vec![0f32; n];
    let plain = best_of(|| {
        let (z1, z2) = z.split_at_mut(n / 2);
        let (x1, x2) = x.split_at(n / 2);
        let (y1, y2) = y.split_at(n / 2);
        std::thread::scope(|s| {
            s.spawn(|| z1.iter_mut().zip(x1.iter().zip(y1)).for_each(|(z, (x, y))| *z = x + y));
            s.spawn(|| z2.iter_mut().zip(x2.iter().zip(y2)).for_each(|(z, (x, y))| *z = x + y));
        });
    });
    println!("plain f32 add loop, 2 threads: {:.1} GB/s", 3.0 * gb / plain);
}

#[test]
#[ignore]
fn bench_matmul() {
    let m = 512;
    let flops = 2.0 * (m * m * m) as f64;
    let (av, bv) = (vec![0.5f32; m * m], vec![0.25f32; m * m]);
    let (mut a, mut b, mut c) = (Buf::of(&av), Buf::of(&bv), Buf::zeroed(m * m * 4));
    let args = [a.arg(), b.arg(), c.arg(), u64_arg(m as u64), u64_arg(m as u64), u64_arg(m as u64)];
    for blocks in [1, 2] {
        let t = best_of(|| run_blocks("matmul_f32", blocks, &args));
        println!("matmul_f32 {m}^3, {blocks} blocks: {:.1} GFLOP/s", flops / t / 1e9);
    }
    let mut cv = vec![0f32; m * m];
    let t = best_of(|| {
        for i in 0..m {
            for j in 0..m {
                cv[i * m + j] = (0..m).map(|k| av[i * m + k] * bv[k * m + j]).sum();
            }
        }
    });
    println!("textbook triple loop, 1 thread: {:.1} GFLOP/s", flops / t / 1e9);
    std::hint::black_box(&cv);
}

#[test]
#[ignore]
fn bench_in_cache() {
    let n = 8192usize;
    let (mut a, mut b, mut c) = (Buf::filled(n * 8, 0x3C), Buf::filled(n * 8, 0x3B), Buf::zeroed(n * 8));
    let names = [
        "add_f32",
        "add_f16",
        "add_bf16",
        "add_f8e4m3",
        "add_f4e2m1",
        "add_i8",
        "add_i4",
        "cast_f32_f16",
        "cast_f16_f32",
        "cast_f32_i32",
        "cast_i64_f16",
        "sum_f32",
        "sum_f16",
    ];
    for name in names {
        let args = if name.starts_with("add") {
            vec![a.arg(), b.arg(), c.arg(), u64_arg(n as u64)]
        } else {
            vec![a.arg(), c.arg(), u64_arg(n as u64)]
        };
        let reps = 2000;
        let t = best_of(|| (0..reps).for_each(|_| run_one(name, &args)));
        println!("{name}: {:.0} Melem/s", (n * reps) as f64 / t / 1e6);
    }
}

/// Runs kernel `name` as a single block on this thread.
fn run_one(name: &str, args: &[Vec<u8>]) {
    let mut copies = args.to_vec();
    let pointers: Vec<*mut c_void> = copies.iter_mut().map(|a| a.as_mut_ptr().cast()).collect();
    // SAFETY: a valid context and the kernel's arguments.
    assert_eq!(unsafe { (find(name).unwrap().kernel)(&context((1, 1, 1), 0), pointers.as_ptr()) }, 0);
}

#[test]
#[ignore]
fn bench_1_1_kernels() {
    let n = 16 << 20; // 64 MiB of f32
    let gb = (n * 4) as f64 / 1e9;
    let (mut a, mut b, mut c) = (Buf::filled(n * 4, 1), Buf::filled(n * 4, 2), Buf::zeroed(n * 4));
    let dims = |v: &[i64]| super::strided::dims_arg(v);
    let scale = 2f32.to_ne_bytes().to_vec();
    let axpby = [a.arg(), b.arg(), c.arg(), u64_arg(n as u64), scale.clone(), scale.clone()];
    println!("axpby_f32, 2 blocks: {:.1} GB/s", 3.0 * gb / best_of(|| run_blocks("axpby_f32", 2, &axpby)));
    let add = [a.arg(), b.arg(), c.arg(), u64_arg(n as u64)];
    println!("add_f32, 2 blocks: {:.1} GB/s", 3.0 * gb / best_of(|| run_blocks("add_f32", 2, &add)));
    // Contiguous (the dense path), then a 4096 x 4096 transpose, then a
    // broadcast of one row.
    let side = 4096i64;
    let (pa, pc) = (a.arg(), c.arg());
    let copy = |src: &[i64], dst: &[i64]| {
        [pa.clone(), pc.clone(), u64_arg(2), dims(&[side, side]), dims(src), dims(dst)].to_vec()
    };
    let dense = copy(&[side, 1], &[side, 1]);
    println!(
        "copy_strided_f32 dense, 2 blocks: {:.1} GB/s",
        2.0 * gb / best_of(|| run_blocks("copy_strided_f32", 2, &dense))
    );
    let cast = [a.arg(), c.arg(), u64_arg(n as u64)];
    println!("cast_f32_f32, 2 blocks: {:.1} GB/s", 2.0 * gb / best_of(|| run_blocks("cast_f32_f32", 2, &cast)));
    let transposed = copy(&[1, side], &[side, 1]);
    println!(
        "copy_strided_f32 transpose, 2 blocks: {:.1} GB/s",
        2.0 * gb / best_of(|| run_blocks("copy_strided_f32", 2, &transposed))
    );
    let broadcast = copy(&[0, 1], &[side, 1]);
    println!(
        "copy_strided_f32 row broadcast, 2 blocks: {:.1} GB/s",
        gb / best_of(|| run_blocks("copy_strided_f32", 2, &broadcast))
    );
    let gapped = [a.arg(), c.arg(), u64_arg(2), dims(&[side, side / 2]), dims(&[side, 2]), dims(&[side / 2, 1])];
    println!(
        "cast_strided_f32_bf16 every other column, 2 blocks: {:.1} Gelem/s",
        (n / 2) as f64 / 1e9 / best_of(|| run_blocks("cast_strided_f32_bf16", 2, &gapped))
    );
    for (outer, reduce, inner) in [(1u64, 4096u64, 4096u64), (4096, 4096, 1), (4096, 64, 64)] {
        let args = [a.arg(), c.arg(), u64_arg(outer), u64_arg(reduce), u64_arg(inner)];
        println!(
            "sum_dim_f32 [{outer}, {reduce}, {inner}], 2 blocks: {:.1} GB/s",
            gb / best_of(|| run_blocks("sum_dim_f32", 2, &args))
        );
    }
    let sum = [a.arg(), c.arg(), u64_arg(n as u64)];
    println!("sum_f32 (one block), 1 block: {:.1} GB/s", gb / best_of(|| run_blocks("sum_f32", 1, &sum)));
    std::hint::black_box(&mut b);
}
