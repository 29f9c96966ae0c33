// nanobind module `fusedmoe._fusedmoe`: build/device info, presets and the planner's explanation.
// Tensor entry points (DLPack -> MoeTensors -> forward) come with the GPU layer kernels.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "fusedmoe/fusedmoe.h"

namespace nb = nanobind;
namespace fm = fusedmoe;

NB_MODULE(_fusedmoe, m) {
  m.doc() = "fusedmoe: fused MoE kernels for Hopper (thin binding of the C++ API)";
  m.def("version", [] { return fm::build_info().version; });
  m.def("build_info", [] {
    const fm::BuildInfo b = fm::build_info();
    nb::dict d;
    d["version"] = b.version;
    d["with_cuda"] = b.with_cuda;
    d["with_nccl"] = b.with_nccl;
    d["cuda_archs"] = b.cuda_archs;
    d["cutlass_version"] = b.cutlass_version;
    d["nccl_version"] = b.nccl_version;
    d["kernels"] = b.kernels;
    return d;
  });
  m.def("presets", [] {
    std::vector<std::string> names;
    for (const auto& p : fm::presets()) names.push_back(p.name);
    return names;
  });
  m.def("explain", [](const std::string& preset, int64_t tokens) {
        const fm::Preset* p = fm::find_preset(preset);
        if (!p) throw nb::value_error(("unknown preset '" + preset + "'").c_str());
        fm::MoeProblem q = p->problem;
        q.num_tokens = q.max_tokens = tokens;
        return fm::explain(q);
      },
      nb::arg("preset"), nb::arg("tokens"));
  m.def("device_status", [] {
    int dev = 0;
    fm::Status st = fm::current_device(&dev);
    if (st.ok()) st = fm::check_device_supported(dev);
    return st.to_string();
  });
}
