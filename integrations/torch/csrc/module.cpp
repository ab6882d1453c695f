// The Python module torch_xdal._C: what torch.xdal (torch_xdal/device.py)
// needs beyond PyTorch's generic torch.accelerator API.
#include "xdal_torch.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/pybind11.h>

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  using namespace torch_xdal;
  m.doc() = "torch_xdal native part: a PrivateUse1 backend on the xdal C ABI";
  route_generated_wrappers_to_fallback();
  m.def("_init", [] {
    use_runtime();
    TX_CHECK(xdal_init());
  });
  m.def("_is_in_bad_fork", [] { return in_bad_fork(); });
  m.def("backend_name", [] { return std::string(xdal_backend_name()); });
  m.def("version", [] {
    uint32_t a = 0, b = 0, c = 0;
    TX_CHECK(xdal_get_version(&a, &b, &c));
    return py::make_tuple(a, b, c);
  });
  m.def("device_count", [] { return int(device_count()); });
  m.def("current_device", [] { return int(current_device()); });
  m.def("set_device", [](int d) { set_device(c10::DeviceIndex(d)); });
  m.def("exchange_device", [](int d) {
    if (d < 0) return -1;
    return int(exchange_device(c10::DeviceIndex(d)));
  });
  m.def("synchronize", [](int d) {
    py::gil_scoped_release no_gil;
    DeviceSwitch on(c10::DeviceIndex(d < 0 ? current_device() : d));
    TX_CHECK(xdal_device_synchronize());
  });
  m.def("device_name", [](int d) {
    xdal_device_properties_t p{};
    p.struct_size = sizeof p;
    TX_CHECK(xdal_device_get_properties(d, &p));
    return std::string(p.name);
  });
  m.def("device_properties", [](int d) {
    xdal_device_properties_t p{};
    p.struct_size = sizeof p;
    TX_CHECK(xdal_device_get_properties(d, &p));
    py::dict r;
    r["name"] = std::string(p.name);
    r["total_memory"] = p.total_memory;
    r["compute_units"] = p.compute_units;
    r["max_threads_per_block"] = p.max_threads_per_block;
    r["warp_size"] = p.warp_size;
    r["dtype_mask"] = p.dtype_mask;
    r["is_simulated"] = bool(p.is_simulated);
    return r;
  });
  m.def("mem_stats", [](int d) {
    xdal_mem_stats_t s{};
    s.struct_size = sizeof s;
    TX_CHECK(xdal_mem_get_stats(d, &s));
    py::dict r;
    r["allocated_bytes"] = s.allocated_bytes;
    r["reserved_bytes"] = s.reserved_bytes;
    r["peak_allocated_bytes"] = s.peak_allocated_bytes;
    r["peak_reserved_bytes"] = s.peak_reserved_bytes;
    r["num_allocs"] = s.num_allocs;
    r["num_frees"] = s.num_frees;
    r["num_ooms"] = s.num_ooms;
    return r;
  });
  m.def("default_generator", [](int d) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(default_generator(c10::DeviceIndex(d))));
  });
  m.def("fallback_counts", [] {
    py::dict r;
    for (const auto& [name, n] : fallback_counts()) r[py::str(name)] = n;
    return r;
  });
  m.def("reset_fallback_counts", [] {
    reset_fallback_counts();
    reset_host_fallback_counts();
  });
  m.def("host_fallback_counts", [] {
    py::dict r;
    for (const auto& [name, n] : host_fallback_counts()) r[py::str(name)] = n;
    return r;
  });
  m.def("_register_graph_impl", [] { register_graph_impl(); });
  m.def("graph_pool_handle", [] {
    const c10::MempoolId_t id = new_graph_pool_id(/*user=*/true);
    return py::make_tuple(id.first, id.second);
  });
  m.def("is_current_stream_capturing", [] { return stream_is_capturing(current_stream(-1)); });
  m.def("launch_compiled_kernel", [](uintptr_t entry, const py::sequence& args, const std::vector<int>& kinds) {
    TORCH_CHECK(args.size() == kinds.size(), "xdal: ", args.size(), " arguments for ", kinds.size(), " kinds");
    std::vector<at::Tensor> tensors;
    tensors.reserve(args.size());  // CompiledArg points into it
    std::vector<CompiledArg> converted;
    converted.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      TORCH_CHECK(kinds[i] >= 0 && kinds[i] <= int(CompiledArgKind::Bool), "xdal: unknown argument kind ", kinds[i]);
      CompiledArg a{CompiledArgKind(kinds[i]), nullptr, 0, 0.0};
      if (a.kind == CompiledArgKind::Pointer) {
        tensors.push_back(py::cast<at::Tensor>(args[i]));
        a.tensor = &tensors.back();
      } else if (a.kind == CompiledArgKind::F64 || a.kind == CompiledArgKind::F32) {
        a.real = py::cast<double>(args[i]);
      } else {
        a.integer = py::cast<int64_t>(args[i]);
      }
      converted.push_back(a);
    }
    launch_compiled_kernel(entry, converted);
  });
  m.def("host_kernel_launches", [] { return host_kernel_launches(); });
  m.def("runs_host_kernels", [] { return runs_host_kernels(); });
  m.def("is_pinned_ptr", [](uintptr_t p) { return is_pinned_ptr(reinterpret_cast<const void*>(p)); });
  m.def("pointer_device", [](uintptr_t p) {
    xdal_pointer_attributes_t a{};
    a.struct_size = sizeof a;
    TX_CHECK(xdal_pointer_get_attributes(reinterpret_cast<const void*>(p), &a));
    return py::make_tuple(int(a.type), a.device);
  });
}
