//! The built-ins' host side, without an OpenCL runtime: the type table
//! against the ABI, the list of kernels and their programs' sources, and
//! the plans' refusals and work-item counts. (The OpenCL backend's
//! tests/builtins_match_fake.rs runs every kernel against the fake
//! backend.)
use super::dtype::DTYPES;
use super::*;

#[test]
fn dtypes_follow_the_abi_numbering() {
    use xdal_abi::xdal_dtype::*;
    let abi = [
        XDAL_DTYPE_F64,
        XDAL_DTYPE_F32,
        XDAL_DTYPE_F16,
        XDAL_DTYPE_BF16,
        XDAL_DTYPE_F8_E4M3,
        XDAL_DTYPE_F8_E5M2,
        XDAL_DTYPE_F4_E2M1,
        XDAL_DTYPE_I64,
        XDAL_DTYPE_I32,
        XDAL_DTYPE_I16,
        XDAL_DTYPE_I8,
        XDAL_DTYPE_U8,
        XDAL_DTYPE_I4,
        XDAL_DTYPE_BOOL,
    ];
    for (i, d) in abi.iter().enumerate() {
        assert_eq!(*d as usize, i, "{}", DTYPES[i].name);
    }
    assert_eq!(dtype_mask(), (1 << 14) - 1);
}

#[test]
fn every_kernel_is_listed_once_and_defined_in_its_program() {
    assert_eq!(all().count(), 910);
    assert_eq!(program_count(), 14);
    let sources: Vec<String> = (0..program_count()).map(program_source).collect();
    let mut seen = std::collections::HashSet::new();
    for b in all() {
        assert!(seen.insert(b.name.clone()), "{} twice", b.name);
        assert!(std::ptr::eq(find(&b.name).expect("found"), b));
        // The kernel names come from macros, so look for what they expand
        // from: `XCAT(kind, T)`; the casts' kernels are written out, with
        // a case for each route.
        let source = &sources[b.program];
        let defined = match b.route {
            Some(route) => {
                let kernel = source.contains(&format!("__kernel void {}(", b.kernel))
                    || (b.kernel.starts_with("cast_strided_from_")
                        && source.contains("__kernel void XCAT(cast_strided_from, T)("));
                kernel && source.contains(&format!("  case {route}: "))
            }
            None => b
                .name
                .strip_suffix(&format!("_{}", DTYPES[b.program].name))
                .is_some_and(|kind| b.kernel == b.name && source.contains(&format!("__kernel void XCAT({kind}, T)("))),
        };
        assert!(defined, "{} is not in program {}", b.name, b.program);
    }
    let sizes = |name: &str| find(name).expect(name).args.iter().map(|a| a.1).collect::<Vec<_>>();
    assert_eq!(sizes("fill_f4e2m1"), [8, 8, 1]);
    assert_eq!(sizes("axpby_bf16"), [8, 8, 8, 8, 2, 2]);
    assert_eq!(sizes("fill_strided_f64"), [8, 8, 128, 128, 8]);
    assert_eq!(sizes("cast_strided_trunc_i4_bool"), [8, 8, 8, 128, 128, 128]);
    assert_eq!(sizes("sum_dim_i16"), [8, 8, 8, 8, 8]);
    assert!(find("cast_strided_f32").is_none());
    // Casts share their source type's two kernels, told apart by the route.
    let route = |name: &str| {
        let b = find(name).expect(name);
        (b.kernel.clone(), b.route)
    };
    assert_eq!(route("cast_i4_bool"), ("cast_from_i4".to_string(), Some(2 * 13)));
    assert_eq!(route("cast_trunc_f32_i8"), ("cast_from_f32".to_string(), Some(2 * 10 + 1)));
    assert_eq!(route("cast_strided_trunc_f64_f8e4m3"), ("cast_strided_from_f64".to_string(), Some(2 * 4 + 1)));
    assert_eq!(route("copy_strided_u8"), ("cast_strided_from_u8".to_string(), Some(2 * 11)));
    assert_eq!(route("sum_dim_f16"), ("sum_dim_f16".to_string(), None));
}

/// The argument bytes of a launch.
fn launch(name: &str, args: &[Vec<u8>]) -> Result<Plan, String> {
    let b = find(name).expect(name);
    let values: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    b.plan(&ArgValues(&values))
}

fn word(v: u64) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

fn dims(values: &[i64]) -> Vec<u8> {
    (0..16).flat_map(|k| values.get(k).copied().unwrap_or(0).to_ne_bytes()).collect()
}

#[test]
fn dense_plans() {
    let items = |r: Result<Plan, String>| r.expect("accepted").work_items;
    assert_eq!(items(launch("fill_f32", &[word(0x1000), word(0), word(0)[..4].to_vec()])), 0);
    assert_eq!(items(launch("fill_f32", &[word(0x1000), word(5), word(0)[..4].to_vec()])), 1024);
    assert_eq!(items(launch("fill_i4", &[word(0x1001), word(1 << 17), vec![3]])), 1024);
    assert_eq!(items(launch("fill_u8", &[word(0x1000), word(1 << 20), vec![3]])), 1 << 16);
    assert_eq!(items(launch("sum_f64", &[word(0), word(0x1000), word(0)])), 1);
    assert_eq!(items(launch("cast_f32_f32", &[word(0x1000), word(0x1000), word(9)])), 0);
    assert_eq!(items(launch("add_i8", &[word(0x1000), word(0x2000), word(0x1000), word(9)])), 1024);
    let units = |r: Result<Plan, String>| r.expect("accepted").units;
    assert_eq!(units(launch("fill_f32", &[word(0x1000), word(5), word(0)[..4].to_vec()])), 5);
    assert_eq!(units(launch("fill_i4", &[word(0x1001), word(9), vec![3]])), 5, "bytes of a packed type");
    assert_eq!(units(launch("sum_f64", &[word(0x1000), word(0x2000), word(7)])), 1, "one work item, in order");
    assert_eq!(units(launch("cast_f32_f32", &[word(0x1000), word(0x1000), word(9)])), 0, "nothing to run");
    assert_eq!(
        units(launch("matmul_f32", &[word(0x1000), word(0x2000), word(0x3000), word(3), word(4), word(5)])),
        12,
        "an output each"
    );
    let refused = |name: &str, args: &[Vec<u8>], why: &str| {
        let message = launch(name, args).expect_err(name);
        assert!(message.starts_with(name) && message.contains(why), "{message}");
    };
    refused("fill_f32", &[word(0), word(1), word(0)[..4].to_vec()], "NULL");
    refused("fill_f32", &[word(0x1002), word(0), word(0)[..4].to_vec()], "aligned");
    refused("fill_f64", &[word(0x1000), word(u64::MAX), word(0)], "address space");
    refused("add_f64", &[word(0x1000), word(0x3000), word(0x1008), word(4)], "overlaps");
    refused("cast_f32_f16", &[word(0x1000), word(0x1000), word(4)], "overlaps");
    refused("sum_f32", &[word(0), word(0), word(0)], "NULL");
    refused("sum_dim_f32", &[word(0x1000), word(0x1010), word(2), word(2), word(2)], "overlaps");
    refused(
        "matmul_i32",
        &[word(0x1000), word(0x2000), word(0x3000), word(1 << 40), word(0), word(1 << 40)],
        "overflows",
    );
}

#[test]
fn strided_plans() {
    let copy = |name: &str, src: u64, dst: u64, sizes: &[i64], s: &[i64], d: &[i64]| {
        launch(name, &[word(src), word(dst), word(sizes.len() as u64), dims(sizes), dims(s), dims(d)])
    };
    let items = |r: Result<Plan, String>| r.expect("accepted").work_items;
    // Parallel: distinct destination elements, unpacked or on even nibbles.
    assert_eq!(items(copy("copy_strided_f32", 0x1000, 0x9000, &[5, 7], &[1, 5], &[7, 1])), 1024);
    assert_eq!(items(copy("copy_strided_i4", 0x1000, 0x9000, &[5, 7], &[1, 5], &[7, 1])), 1024);
    assert_eq!(items(copy("copy_strided_i4", 0x1000, 0x9000, &[4, 3], &[-3, 2], &[-6, -2])), 1024);
    // One work item: coinciding elements, or odd nibble strides out of order.
    assert_eq!(items(copy("copy_strided_f32", 0x1000, 0x9000, &[2, 3], &[3, 1], &[1, 1])), 1);
    assert_eq!(items(copy("copy_strided_i4", 0x1000, 0x9000, &[5, 7], &[7, 1], &[1, 5])), 1);
    // Empty, and in place onto itself.
    assert_eq!(items(copy("copy_strided_f32", 0, 0, &[0, 7], &[1, 5], &[7, 1])), 0);
    assert_eq!(items(copy("copy_strided_f32", 0x1000, 0x1000, &[5, 7], &[7, 1], &[7, 1])), 0);
    assert_eq!(items(copy("cast_strided_f32_i32", 0x1000, 0x1000, &[5, 7], &[7, 1], &[7, 1])), 1024);
    let refused = |r: Result<Plan, String>, why: &str| {
        let message = r.expect_err("refused");
        assert!(message.contains(why), "{message}");
    };
    refused(copy("copy_strided_f32", 0x1000, 0x9000, &[1; 17], &[1; 16], &[1; 16]), "ndim");
    refused(copy("copy_strided_f32", 0x1000, 0x9000, &[3], &[1], &[0]), "stride is 0");
    refused(copy("copy_strided_f32", 0x1000, 0x1004, &[8], &[1], &[1]), "overlaps");
    refused(copy("cast_strided_f32_i32", 0x1000, 0x1000, &[2, 2], &[1, 1], &[1, 1]), "coincide");
    refused(copy("copy_strided_u8", 0x1000, 0x9000, &[1 << 40, 1 << 40], &[1, 1], &[1, 1]), "overflow");
    refused(copy("copy_strided_f64", 0x1004, 0x9000, &[0], &[1], &[1]), "aligned");
    let fill = |sizes: &[i64], strides: &[i64]| {
        launch("fill_strided_bool", &[word(0x1000), word(sizes.len() as u64), dims(sizes), dims(strides), vec![1]])
    };
    assert_eq!(items(fill(&[3, 3], &[1, 1])), 1);
    assert_eq!(items(fill(&[3, 3], &[3, 1])), 1024);
    refused(fill(&[2, 3], &[0, 1]), "stride is 0");
}

#[test]
fn conversions_follow_the_fakes_paths() {
    use super::dtype::convert_expr;
    let index = |name: &str| DTYPES.iter().position(|t| t.name == name).expect(name);
    let expr = |s: &str, d: &str, trunc: bool| convert_expr(index(s), index(d), trunc);
    assert_eq!(expr("f16", "f16", true), "(x)");
    assert_eq!(expr("f16", "bool", false), "bool_from_bool(f16_nonzero(x))");
    assert_eq!(expr("i64", "f16", false), "f16_from_i64(i64_to_i64(x))");
    assert_eq!(expr("i64", "f8e4m3", true), "f8e4m3_trunc_i64(i64_to_i64(x))");
    assert_eq!(expr("f64", "i4", true), "i4_trunc_f64(x)");
    assert_eq!(expr("bf16", "u8", true), "u8_trunc_f64((double)bf16_to_f32(x))");
    assert_eq!(expr("bf16", "u8", false), "u8_from_f32(bf16_to_f32(x))");
    assert_eq!(expr("f32", "f8e4m3", true), "f8e4m3_trunc_f32(f32_to_f32(x))");
    assert_eq!(expr("f64", "f8e4m3", false), "f8e4m3_from_f64(x)");
}

#[test]
fn cuda_programs_are_the_programs_under_a_comment() {
    let stems: Vec<&str> = (0..program_count()).map(program_stem).collect();
    assert_eq!(stems, DTYPES.map(|t| t.name));
    for (t, stem) in stems.iter().enumerate() {
        let (source, cuda) = (program_source(t), cuda_program(t));
        let (header, rest) = cuda.split_once('\n').expect("a first line");
        assert!(header.starts_with("// ") && header.contains(stem), "{header}");
        assert_eq!(rest, source);
        // NVRTC compiles it with no header at hand, nor any include path.
        assert!(!source.contains("#include"));
        assert!(source.starts_with("// The two languages"));
    }
}
