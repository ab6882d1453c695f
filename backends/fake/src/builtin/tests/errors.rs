//! The registry, and the failures kernels report instead of misbehaving.
use super::*;
use crate::builtin::{all, dtype_mask};
use crate::dtype::DType;
use std::collections::HashSet;
use xdal_abi::xdal_status;

const INVALID: i32 = xdal_status::XDAL_ERROR_INVALID_VALUE as i32;
const NULL: i32 = xdal_status::XDAL_ERROR_NULL_POINTER as i32;

#[test]
fn registry_lists_every_kernel() {
    let names: HashSet<&str> = all().map(|b| b.name.as_str()).collect();
    // 1.0: five per type and the casts; 1.1: four more per type and three
    // more per pair.
    assert_eq!(all().count(), 14 * 5 + 14 * 14 + 14 * 4 + 3 * 14 * 14);
    assert_eq!(names.len(), all().count(), "names are unique");
    for s in DType::ALL {
        let t = s.name();
        for op in ["fill", "add", "mul", "sum", "matmul", "copy_strided", "fill_strided", "axpby", "sum_dim"] {
            assert!(names.contains(format!("{op}_{t}").as_str()), "{op}_{t}");
        }
        for d in DType::ALL {
            for op in ["cast", "cast_trunc", "cast_strided", "cast_strided_trunc"] {
                assert!(find(&format!("{op}_{t}_{}", d.name())).is_some(), "{op}_{t}_{}", d.name());
            }
        }
    }
    // The 1.0 kernels keep their place at the front of the list.
    let first: Vec<&str> = all().take(6).map(|b| b.name.as_str()).collect();
    assert_eq!(first, ["fill_f64", "add_f64", "mul_f64", "sum_f64", "matmul_f64", "fill_f32"]);
    assert_eq!(all().nth(14 * 5).unwrap().name, "cast_f64_f64");
    assert_eq!(all().nth(14 * 5 + 14 * 14).unwrap().name, "copy_strided_f64");
    assert_eq!(find("fill_f32").unwrap().arg_sizes, [8, 8, 4]);
    assert_eq!(find("fill_bf16").unwrap().arg_sizes, [8, 8, 2]);
    assert_eq!(find("fill_i4").unwrap().arg_sizes, [8, 8, 1]);
    assert_eq!(find("fill_f64").unwrap().arg_sizes, [8, 8, 8]);
    assert_eq!(find("add_u8").unwrap().arg_sizes, [8, 8, 8, 8]);
    assert_eq!(find("sum_bool").unwrap().arg_sizes, [8, 8, 8]);
    assert_eq!(find("matmul_f8e5m2").unwrap().arg_sizes, [8; 6]);
    assert_eq!(find("cast_f4e2m1_i64").unwrap().arg_sizes, [8, 8, 8]);
    assert_eq!(find("copy_strided_f32").unwrap().arg_sizes, [8, 8, 8, 128, 128, 128]);
    assert_eq!(find("cast_strided_i4_bf16").unwrap().arg_sizes, [8, 8, 8, 128, 128, 128]);
    assert_eq!(find("cast_strided_trunc_f32_i8").unwrap().arg_sizes, [8, 8, 8, 128, 128, 128]);
    assert_eq!(find("cast_trunc_f16_u8").unwrap().arg_sizes, [8, 8, 8]);
    assert_eq!(find("fill_strided_f16").unwrap().arg_sizes, [8, 8, 128, 128, 2]);
    assert_eq!(find("fill_strided_f4e2m1").unwrap().arg_sizes, [8, 8, 128, 128, 1]);
    assert_eq!(find("axpby_f64").unwrap().arg_sizes, [8, 8, 8, 8, 8, 8]);
    assert_eq!(find("axpby_i4").unwrap().arg_sizes, [8, 8, 8, 8, 1, 1]);
    assert_eq!(find("sum_dim_bf16").unwrap().arg_sizes, [8, 8, 8, 8, 8]);
    assert!(find("fill_f128").is_none() && find("").is_none());
    assert!(find("copy_strided_f32_f32").is_none() && find("cast_trunc_strided_f32_i32").is_none());
    assert_eq!(dtype_mask(), 0x3FFF);
}

/// Calls `name`'s block 0 with a raw context and argument array.
fn call(name: &str, ctx: *const xdal_kernel_context_t, args: *const *mut c_void) -> i32 {
    // SAFETY: the kernels validate what these tests make invalid.
    unsafe { (find(name).unwrap().kernel)(ctx, args) }
}

#[test]
fn bad_contexts() {
    let mut dst = Buf::zeroed(16);
    let mut bytes = [dst.arg(), u64_arg(4), 1.0f32.to_ne_bytes().to_vec()];
    let args: Vec<*mut c_void> = bytes.iter_mut().map(|a| a.as_mut_ptr().cast()).collect();
    let good = context((1, 1, 1), 0);
    assert_eq!(call("fill_f32", &good, args.as_ptr()), 0);
    assert_eq!(call("fill_f32", std::ptr::null(), args.as_ptr()), NULL);
    assert_eq!(call("fill_f32", &good, std::ptr::null()), NULL);
    let mut small = good;
    small.struct_size = 8;
    assert_eq!(call("fill_f32", &small, args.as_ptr()), INVALID);
    let mut outside = good;
    outside.block_idx.x = 1;
    assert_eq!(call("fill_f32", &outside, args.as_ptr()), INVALID);
    let mut empty = good;
    empty.grid_dim.y = 0;
    assert_eq!(call("fill_f32", &empty, args.as_ptr()), INVALID);
    let null_arg = [args[0], std::ptr::null_mut(), args[2]];
    assert_eq!(call("fill_f32", &good, null_arg.as_ptr()), NULL);
}

#[test]
fn bad_arrays() {
    let null = ptr_arg(std::ptr::null_mut());
    let one = 1.0f32.to_ne_bytes().to_vec();
    assert_eq!(launch("fill_f32", (2, 1, 1), &[null.clone(), u64_arg(4), one.clone()]), NULL);
    assert_eq!(launch("fill_f32", (2, 1, 1), &[null.clone(), u64_arg(0), one.clone()]), 0);
    let mut buf = Buf::zeroed(64);
    let p = buf.arg();
    let base = u64::from_ne_bytes(p.clone().try_into().unwrap());
    let misaligned = (base + 2).to_ne_bytes().to_vec();
    assert_eq!(launch("fill_f32", (1, 1, 1), &[misaligned.clone(), u64_arg(4), one.clone()]), INVALID);
    // Bytes and packed types have no alignment.
    assert_eq!(launch("fill_i4", (1, 1, 1), &[misaligned, u64_arg(4), vec![3]]), 0);
    assert_eq!(launch("fill_f64", (1, 1, 1), &[p.clone(), u64_arg(u64::MAX), vec![0; 8]]), INVALID);
    // add: out overlapping an input other than exactly.
    let shifted = (base + 4).to_ne_bytes().to_vec();
    assert_eq!(launch("add_f32", (1, 1, 1), &[p.clone(), p.clone(), shifted, u64_arg(4)]), INVALID);
    // matmul: c over a, or sizes that overflow.
    let args = [p.clone(), p.clone(), p.clone(), u64_arg(2), u64_arg(2), u64_arg(2)];
    assert_eq!(launch("matmul_f32", (1, 1, 1), &args), INVALID);
    let args = [p.clone(), p.clone(), null, u64_arg(1 << 40), u64_arg(1 << 40), u64_arg(1)];
    assert_eq!(launch("matmul_f32", (1, 1, 1), &args), INVALID);
    // sum: out NULL.
    assert_eq!(launch("sum_f32", (1, 1, 1), &[p, ptr_arg(std::ptr::null_mut()), u64_arg(3)]), NULL);
}
