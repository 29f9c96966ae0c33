// permute_quant_instances.cu — the permute/quantise kernels for the registry (kernels/registry.h).
// They are defined in permute_quant.cuh and launched from permute_quant_launch.cu. The template
// instances there have internal-linkage host stubs (nvcc's -static-global-template-stub default),
// so no other file can take their addresses: they are listed by name (fn = nullptr) and loaded
// through the module of the file's non-template test kernels, whose stubs are external (declared
// here with the same name and signature; including permute_quant.cuh would define them twice).
// preload_kernels() loads every function of that module.
// TODO(lead): once permute_quant_launch.cu settles, move append_permute_quant_instances() into it
// (with &permute_quant_kernel<...> addresses) and drop this file.
#include <cstdint>
#include <string>

#include "kernels/registry.h"

namespace fusedmoe::kernels::pq_detail {
void debug_convert_kernel(uint8_t* e4m3, uint8_t* ue8m0, uint32_t start, uint32_t count);
void debug_scale_kernel(float* scale, float* inv, uint32_t start, uint32_t count, bool ue8m0);
struct PQParams;
void scale_gather_kernel(PQParams p);
}  // namespace fusedmoe::kernels::pq_detail

namespace fusedmoe::kernels {
void append_permute_quant_instances(KernelList* out) {
  // permute_quant_kernel<TIn, kFp8, VPT> and absmax_partials_kernel<TIn> as launch_rows /
  // launch_typed instantiate them.
  for (const char* in : {"bf16", "f16"})
    for (const char* mode : {"copy", "e4m3"})
      for (int vpt : {1, 2, 4, 8})
        out->push_back({"permute_quant",
                        std::string("permute_quant<") + in + "," + mode + ",vpt" + std::to_string(vpt) + ">", nullptr});
  for (const char* in : {"bf16", "f16"})
    out->push_back({"permute_quant", std::string("absmax_partials<") + in + ">", nullptr});
  out->push_back({"permute_quant", "scale_gather (staged 1x128 scales -> permuted layout)",
                  reinterpret_cast<const void*>(&pq_detail::scale_gather_kernel)});
  out->push_back({"permute_quant", "debug_convert_e4m3_ue8m0 (test entry point)",
                  reinterpret_cast<const void*>(&pq_detail::debug_convert_kernel)});
  out->push_back({"permute_quant", "debug_fp8_scale (test entry point)",
                  reinterpret_cast<const void*>(&pq_detail::debug_scale_kernel)});
}
}  // namespace fusedmoe::kernels
