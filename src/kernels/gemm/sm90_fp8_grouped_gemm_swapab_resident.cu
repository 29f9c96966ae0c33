// sm90_fp8_grouped_gemm_swapab_resident.cu — FP8 Swap-AB GEMM2 with the token tile's activations
// resident in shared memory for the whole segment (Config::kResident; session 33's design, an
// experiment: FUSEDMOE_FP8_RESIDENT=1, off by default). Stages hold weights only (8 KB).
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"

namespace fusedmoe::kernels::sm90_fp8_grouped {

using ResidentSwapAB8 = Config<true, 8, 11, 2, true>;
using ResidentSwapAB16 = Config<true, 16, 11, 2, true>;
using ResidentSwapAB32 = Config<true, 32, 11, 2, true>;
static_assert(smem_fits<ResidentSwapAB8>() && smem_fits<ResidentSwapAB16>() && smem_fits<ResidentSwapAB32>(),
              "two resident-activation CTAs must fit on one SM");

int swapab_resident_tiles(int tile) {
  return tile == 8 ? ResidentSwapAB8::kResTiles : tile == 16 ? ResidentSwapAB16::kResTiles
                                                 : tile == 32 ? ResidentSwapAB32::kResTiles : 0;
}

cudaError_t launch_swapab_resident(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  switch (tile) {
    case 8: return launch_instance<ResidentSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<ResidentSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<ResidentSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_resident_instances(KernelList* out) {
  append_config_instances<ResidentSwapAB8>(out);
  append_config_instances<ResidentSwapAB16>(out);
  append_config_instances<ResidentSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
