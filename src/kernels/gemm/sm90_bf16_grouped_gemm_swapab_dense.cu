// sm90_bf16_grouped_gemm_swapab_dense.cu — the BF16 Swap-AB instances with more CTAs per SM
// (GroupedGemmArgs::dense, forced only: not measured faster yet): token tiles 8 and 16 at 4 CTAs
// per SM, 32 at 3, each with the stages that fit. The FP8 kernel's twins
// (sm90_fp8_grouped_gemm_swapab_dense.cu) measured faster on the H200 (session 27).
#include "kernels/gemm/sm90_bf16_grouped_gemm.cuh"
#include "kernels/gemm/sm90_bf16_grouped_gemm_internal.h"

namespace fusedmoe::kernels::sm90_grouped {

using DenseSwapAB8 = Config</*swap=*/true, /*tokens=*/8, 5, /*CTAs per SM=*/dense_swapab_ctas_per_sm(8)>;
using DenseSwapAB16 = Config</*swap=*/true, /*tokens=*/16, 4, dense_swapab_ctas_per_sm(16)>;
using DenseSwapAB32 = Config</*swap=*/true, /*tokens=*/32, 5, dense_swapab_ctas_per_sm(32)>;
static_assert(smem_fits<DenseSwapAB8>() && smem_fits<DenseSwapAB16>() && smem_fits<DenseSwapAB32>(),
              "the dense instances' CTAs must fit on one SM together");

cudaError_t launch_swapab_dense(const GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream,
                                bool force_simple, int* n_sub) {
  switch (tile) {
    case 8: return launch_instance<DenseSwapAB8>(a, gemm2, stream, force_simple, n_sub);
    case 16: return launch_instance<DenseSwapAB16>(a, gemm2, stream, force_simple, n_sub);
    case 32: return launch_instance<DenseSwapAB32>(a, gemm2, stream, force_simple, n_sub);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_dense_instances(KernelList* out) {
  append_config_instances<DenseSwapAB8>(out);
  append_config_instances<DenseSwapAB16>(out);
  append_config_instances<DenseSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_grouped
