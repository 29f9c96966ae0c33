// cutlass_grouped_gemm_internal.h — entry points of the CUTLASS configuration files
// (cutlass_grouped_gemm_{coop,coop_c2,coop_c12,coop256,pingpong,pingpong64,gated}.cu, cutlass_fp8_{block,row,gated}_gemm*.cu), used by cutlass_grouped_gemm.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "kernels/gemm/cutlass_grouped_gemm.h"
#include "kernels/registry.h"

namespace fusedmoe::kernels::cutlass_grouped {

cudaError_t run_coop128x256(const CutlassGroupedArgs& a, cudaStream_t stream);
size_t scratch_coop128x256(int groups);
void append_coop128x256(KernelList* out, const char* name, const char* setup_name);

cudaError_t run_pingpong128x128(const CutlassGroupedArgs& a, cudaStream_t stream);
size_t scratch_pingpong128x128(int groups);
void append_pingpong128x128(KernelList* out, const char* name, const char* setup_name);

cudaError_t run_coop128x256c2(const CutlassGroupedArgs& a, cudaStream_t stream);
size_t scratch_coop128x256c2(int groups);
void append_coop128x256c2(KernelList* out, const char* name, const char* setup_name);

cudaError_t run_coop128x256c12(const CutlassGroupedArgs& a, cudaStream_t stream);  // cutlass_grouped_gemm_coop_c12.cu
size_t scratch_coop128x256c12(int groups);
void append_coop128x256c12(KernelList* out, const char* name, const char* setup_name);

cudaError_t run_coop256x128(const CutlassGroupedArgs& a, cudaStream_t stream);
size_t scratch_coop256x128(int groups);
void append_coop256x128(KernelList* out, const char* name, const char* setup_name);

cudaError_t run_pingpong64x256(const CutlassGroupedArgs& a, cudaStream_t stream);  // cutlass_grouped_gemm_pingpong64.cu
size_t scratch_pingpong64x256(int groups);
void append_pingpong64x256(KernelList* out, const char* name, const char* setup_name);

cudaError_t run_gated(const CutlassGatedArgs& a, cudaStream_t stream);  // cutlass_grouped_gemm_gated.cu
size_t scratch_gated(int groups);
void append_gated(KernelList* out, const char* name, const char* setup_name);
cudaError_t run_gate_up_blocks8(const void* w, void* out, int64_t experts, int n, int units, cudaStream_t stream);
std::string gated_layout_check();

// CutlassFp8Config 1 / 2 / 3: cutlass_fp8_block_gemm.cu / _c12.cu / _pp64c12.cu
cudaError_t run_fp8_block(const CutlassFp8BlockArgs& a, cudaStream_t stream);
size_t scratch_fp8_block(int groups, int n, int k, int64_t max_rows);
void append_fp8_block(KernelList* out, const char* name);
cudaError_t run_fp8_block_c12(const CutlassFp8BlockArgs& a, cudaStream_t stream);
size_t scratch_fp8_block_c12(int groups, int n, int k, int64_t max_rows);
void append_fp8_block_c12(KernelList* out, const char* name);
cudaError_t run_fp8_block_pp64c12(const CutlassFp8BlockArgs& a, cudaStream_t stream);
size_t scratch_fp8_block_pp64c12(int groups, int n, int k, int64_t max_rows);
void append_fp8_block_pp64c12(KernelList* out, const char* name);
const void* fp8_scales_kernel_ptr();  // the scale re-layout kernel every block configuration launches
std::string fp8_block_scale_check();  // blockwise_scale_load_check of each block configuration
std::string fp8_block_scale_check_c12();
std::string fp8_block_scale_check_pp64c12();

cudaError_t run_fp8_gated(const CutlassFp8GatedArgs& a, cudaStream_t stream);  // cutlass_fp8_gated_gemm.cu
size_t scratch_fp8_gated(int groups, int n_w, int k, int64_t max_rows);
void append_fp8_gated(KernelList* out, const char* name);
std::string fp8_gated_layout_check();
std::string fp8_gated_scale_check();

// CutlassFp8Config 1 / 2 / 3: cutlass_fp8_row_gemm.cu / _c12.cu / _pp64c12.cu
cudaError_t run_fp8_row(const CutlassFp8RowArgs& a, cudaStream_t stream);
size_t scratch_fp8_row(int groups);
void append_fp8_row(KernelList* out, const char* name);
cudaError_t run_fp8_row_c12(const CutlassFp8RowArgs& a, cudaStream_t stream);
size_t scratch_fp8_row_c12(int groups);
void append_fp8_row_c12(KernelList* out, const char* name);
cudaError_t run_fp8_row_pp64c12(const CutlassFp8RowArgs& a, cudaStream_t stream);
size_t scratch_fp8_row_pp64c12(int groups);
void append_fp8_row_pp64c12(KernelList* out, const char* name);

}  // namespace fusedmoe::kernels::cutlass_grouped
