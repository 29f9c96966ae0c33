// sm90_bf16_grouped_gemm_internal.h — entry points shared by the sm90_bf16_grouped_gemm*.cu
// translation units (instances are split over several files to keep each compile short).
#pragma once

#include <cuda_runtime.h>

#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/registry.h"

namespace fusedmoe::kernels::sm90_grouped {

// Pipeline stages of each instance (the names in sm90_bf16_grouped_gemm_launch.cu spell these).
constexpr int kNormalStages = 5;    // 128x128x64: 32 KB per stage, 1 CTA per SM
constexpr int kNormalPingStages = 4;  // the ping-pong instance: 4 x 32 KB + two 128-row staging buffers
constexpr int kSwapStages8 = 11;    // 64x8x64:  9 KB per stage (2 CTAs per SM)
constexpr int kSwapStages16 = 10;   // 64x16x64: 10 KB
constexpr int kSwapStages32 = 8;    // 64x32x64: 12 KB
constexpr int kSwapStages64 = 6;    // 64x64x64: 16 KB

// Normal family (tile 128x128x64, 5 stages): sm90_bf16_grouped_gemm_launch.cu.
cudaError_t launch_normal(const GroupedGemmArgs& a, bool gemm2, cudaStream_t stream, bool force_simple,
                          int* n_sub);
// Swap-AB, token tile 8 or 16: sm90_bf16_grouped_gemm_swapab_small.cu.
cudaError_t launch_swapab_small(const GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream,
                                bool force_simple, int* n_sub);
// The packed Swap-AB weights (GroupedGemmArgs::w_packed; the image does not depend on the token
// tile): sm90_bf16_grouped_gemm_swapab_small.cu.
int64_t packed_weight_bytes_swapab(const GroupedGemmArgs& a, bool gemm2);
void append_bf16_weight_pack_instance(KernelList* out);
cudaError_t pack_weights_swapab(const GroupedGemmArgs& a, bool gemm2, void* out, cudaStream_t stream);
// Swap-AB, token tile 32 or 64: sm90_bf16_grouped_gemm_swapab_large.cu.
cudaError_t launch_swapab_large(const GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream,
                                bool force_simple, int* n_sub);

// Swap-AB, token tile 8, 16 or 32 on the dense instances (3-4 CTAs per SM, GroupedGemmArgs::dense):
// sm90_bf16_grouped_gemm_swapab_dense.cu.
cudaError_t launch_swapab_dense(const GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream,
                                bool force_simple, int* n_sub);
void append_swapab_dense_instances(KernelList* out);  // sm90_bf16_grouped_gemm_swapab_dense.cu

// The kernels each of the three files instantiates (kernels/registry.h).
void append_normal_instances(KernelList* out);       // sm90_bf16_grouped_gemm_launch.cu
void append_swapab_small_instances(KernelList* out); // sm90_bf16_grouped_gemm_swapab_small.cu
void append_swapab_large_instances(KernelList* out); // sm90_bf16_grouped_gemm_swapab_large.cu

}  // namespace fusedmoe::kernels::sm90_grouped
