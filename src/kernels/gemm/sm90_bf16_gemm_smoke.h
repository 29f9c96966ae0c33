// sm90_bf16_gemm_smoke.h — host entry point of the smoke-test GEMM (sm_90a, CuTe TMA + WGMMA).
//
//   C[M,N] = A[M,K] · B[N,K]^T   A, B, C bf16 row-major (A, B K-contiguous; C N-contiguous),
//                                fp32 accumulation, bf16 output.
//
// Plain C++ header: no CUDA kernel code, usable from .cpp files.
#pragma once

#include <cuda_runtime.h>

namespace fusedmoe::kernels {

// Name of the compiled instance (tile MxNxK and pipeline stages), e.g.
// "sm90_bf16_gemm_smoke_128x128x64_s5".
const char* sm90_bf16_gemm_smoke_name();

// Enqueues C = A · B^T on `stream`; allocates nothing.
//   m, n, k >= 0 at run time; any M and N; K a multiple of 8 (TMA needs 16-byte row strides).
//   a, b, c must be 16-byte aligned (nullptr allowed only when the matrix is empty).
// Returns cudaErrorInvalidValue for K % 8 != 0, negative sizes, unaligned pointers or sizes
// beyond the grid limits; otherwise the launch status. M == 0 or N == 0: nothing to do;
// K == 0: C is zeroed.
cudaError_t sm90_bf16_gemm_smoke(const void* a, const void* b, void* c, int m, int n, int k,
                                 cudaStream_t stream);

}  // namespace fusedmoe::kernels
