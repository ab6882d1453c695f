//! `xdal-abi-manifest`: prints, as JSON, the parts of xdal's ABI contract
//! that the headers do not carry, taken from the library's own code and
//! compiler, for `xdal-abi freeze` to record in a baseline and `xdal-abi
//! check` to compare with every baseline:
//!
//! - `required_entries`: the backend-table entries the front refuses a
//!   backend without (a backend built against an earlier minor must never
//!   be refused);
//! - `builtins`: the built-in kernel catalogue of the reference (fake)
//!   backend, every name with the byte size of each argument, in order;
//! - `layouts`: the size, alignment and field offsets the Rust compiler
//!   gave every C ABI type, which is what the library reads and writes
//!   whether or not cbindgen could express it in the headers.
//!
//! Built from the same sources, in the same build, as the library.
use serde_json::{json, Value};
use std::mem::{align_of, offset_of, size_of};
use xdal_abi::*;

/// Written into every manifest; `xdal-abi` refuses any other.
const FORMAT: &str = "xdal-abi-manifest/1";

/// The size of the field `field` reaches, without a value of `T`.
fn field_size<T, F>(_field: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// One type's layout: `layout!(type { field, rust_field as "c_name", .. })`,
/// fields in declaration order, under their C names.
macro_rules! layout {
    ($t:ident { $($field:ident $(as $c:literal)?),* $(,)? }) => {
        json!({
            "name": stringify!($t),
            "size": size_of::<$t>(),
            "align": align_of::<$t>(),
            "fields": [$(json!({
                "name": layout!(@name $field $($c)?),
                "offset": offset_of!($t, $field),
                "size": field_size(|s: &$t| &s.$field),
            })),*],
        })
    };
    (@name $field:ident $c:literal) => { $c };
    (@name $field:ident) => { stringify!($field) };
}

/// Every struct of the C ABI (the headers' structs with a definition).
fn layouts() -> Vec<Value> {
    vec![
        layout!(xdal_device_properties {
            struct_size,
            name,
            total_memory,
            compute_units,
            max_threads_per_block,
            max_block_dim,
            max_grid_dim,
            shared_mem_per_block,
            warp_size,
            dtype_mask,
            is_simulated,
        }),
        layout!(xdal_dim3 { x, y, z }),
        layout!(xdal_kernel_context { struct_size, grid_dim, block_dim, block_idx, shared_mem, shared_mem_bytes }),
        layout!(xdal_kernel_arg { value, size }),
        layout!(xdal_pointer_attributes { struct_size, type_ as "type", device, base, size }),
        layout!(xdal_mem_stats {
            struct_size,
            allocated_bytes,
            reserved_bytes,
            peak_allocated_bytes,
            num_allocs,
            num_frees,
            num_ooms,
            peak_reserved_bytes,
        }),
        layout!(xdal_api_record {
            struct_size,
            function,
            correlation_id,
            external_id,
            start_ns,
            end_ns,
            thread_id,
            status,
        }),
        layout!(xdal_activity {
            struct_size,
            kind,
            device,
            stream_id,
            correlation_id,
            start_ns,
            end_ns,
            name,
            bytes,
            copy_kind,
            grid,
            block,
        }),
        layout!(xdal_tracer_desc { struct_size, api, activity, user_data, activity_mask }),
        layout!(xdal_backend_graph_node {
            kind,
            deps,
            num_deps,
            function,
            grid,
            block,
            shared_mem_bytes,
            args,
            num_args,
            dst,
            src,
            bytes,
            copy_kind,
            value,
            host_func,
            user_data,
        }),
        layout!(xdal_backend_v1 {
            struct_size,
            abi_major,
            abi_minor,
            name,
            device_get_count,
            device_get_properties,
            device_synchronize,
            device_get_stream_priority_range,
            device_can_access_peer,
            mem_get_info,
            mem_alloc,
            mem_free,
            mem_alloc_host,
            mem_free_host,
            mem_alloc_async,
            mem_free_async,
            mem_copy,
            mem_copy_async,
            mem_copy_peer,
            mem_set,
            mem_set_async,
            mem_get_stats,
            mem_reset_peak_stats,
            mem_empty_cache,
            stream_create,
            stream_destroy,
            stream_query,
            stream_synchronize,
            stream_wait_event,
            launch_host_func,
            event_create,
            event_destroy,
            event_record,
            event_query,
            event_synchronize,
            event_elapsed_time,
            address_get_device,
            last_error_message,
            module_load,
            module_load_data,
            module_get_builtin,
            module_unload,
            module_get_function,
            function_from_host,
            function_release,
            launch_kernel,
            debug_set_faults,
            graph_exec_create,
            graph_exec_launch,
            graph_exec_destroy,
            time_next_enqueue,
        }),
    ]
}

fn manifest() -> Value {
    let builtins: Vec<Value> =
        xdal_fake::builtin_kernels().map(|(name, arg_sizes)| json!({ "name": name, "arg_sizes": arg_sizes })).collect();
    json!({
        "format": FORMAT,
        "abi_version": [XDAL_ABI_VERSION_MAJOR, XDAL_ABI_VERSION_MINOR],
        "required_entries": xdal::required_backend_entries().collect::<Vec<_>>(),
        "builtins": builtins,
        "layouts": layouts(),
    })
}

fn main() {
    if std::env::args().len() > 1 {
        eprintln!("usage: xdal-abi-manifest (no arguments): prints the manifest as JSON on stdout");
        std::process::exit(2);
    }
    let mut text = serde_json::to_string_pretty(&manifest()).expect("a manifest serializes");
    text.push('\n');
    if let Err(e) = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
        eprintln!("xdal-abi-manifest: cannot write the manifest: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The newest baseline's description.
    fn newest_baseline() -> Value {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../abi/baselines");
        let mut versions: Vec<(u64, u64, std::path::PathBuf)> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                let (major, minor) = path.file_name()?.to_str()?.split_once('.')?;
                Some((major.parse().ok()?, minor.parse().ok()?, path))
            })
            .collect();
        versions.sort();
        let newest = &versions.last().expect("a baseline").2;
        serde_json::from_str(&std::fs::read_to_string(newest.join("abi.json")).unwrap()).unwrap()
    }

    #[test]
    fn every_released_struct_and_field_is_listed() {
        let m = super::manifest();
        for s in newest_baseline()["structs"].as_array().unwrap() {
            let layout = m["layouts"].as_array().unwrap().iter().find(|l| l["name"] == s["name"]);
            let layout = layout.unwrap_or_else(|| panic!("no layout of {}: add it to layouts()", s["name"]));
            for f in s["fields"].as_array().unwrap() {
                let listed = layout["fields"].as_array().unwrap().iter().any(|l| l["name"] == f["name"]);
                assert!(listed, "{}.{} is not listed in layouts()", s["name"], f["name"]);
            }
        }
    }

    #[test]
    fn every_part_is_there() {
        let m = super::manifest();
        assert_eq!(m["format"], super::FORMAT);
        assert!(m["required_entries"].as_array().unwrap().iter().any(|e| e == "mem_alloc"));
        let fill = m["builtins"].as_array().unwrap().iter().find(|b| b["name"] == "fill_f32").unwrap();
        assert_eq!(fill["arg_sizes"], serde_json::json!([8, 8, 4]));
        let dim3 = m["layouts"].as_array().unwrap().iter().find(|l| l["name"] == "xdal_dim3").unwrap();
        assert_eq!((dim3["size"].as_u64(), dim3["align"].as_u64()), (Some(12), Some(4)));
        assert_eq!(dim3["fields"][2], serde_json::json!({"name": "z", "offset": 8, "size": 4}));
    }
}
