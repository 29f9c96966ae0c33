// The Swap-AB epilogue's stmatrix puts (SwapStage::put_values / put_matrices: the FP8 kernel's)
// against its per-value puts, on the host: CuTe's partition of the kernels' WGMMA accumulators and
// stmatrix .trans's fragment layout (swap_stage_check.cu). On the GPU the FP8 kernel runs the stmatrix
// puts and the BF16 kernel the per-value ones (session 48: each kernel compiled with its own).
#include <gtest/gtest.h>

#if defined(FUSEDMOE_WITH_CUDA)
#include <string>

#include "kernels/gemm/sm90_bf16_grouped_gemm.h"

TEST(SwapAbEpilogue, StmatrixPutsLandWhereThePerValuePutsDo) {
  EXPECT_EQ(fusedmoe::kernels::swap_stsm_layout_check(), "");
}
#else
TEST(SwapAbEpilogue, SkippedWithoutCuda) { GTEST_SKIP() << "CPU-only build: no kernels"; }
#endif
