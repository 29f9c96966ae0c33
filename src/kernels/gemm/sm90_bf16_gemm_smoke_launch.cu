// sm90_bf16_gemm_smoke_launch.cu — host side of the smoke GEMM: checks arguments, builds the two
// TMA descriptors (A [M,K], B [N,K], both K-contiguous) and launches one CTA per 128x128 C tile.
#include "kernels/gemm/sm90_bf16_gemm_smoke.h"

#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/gemm/sm90_bf16_gemm_smoke.cuh"
#include "kernels/registry.h"

namespace fusedmoe::kernels {

namespace {

using SmokeConfig = sm90_smoke::GemmConfig</*TileM=*/128, /*TileN=*/128, /*TileK=*/64, /*Stages=*/5>;
static_assert(SmokeConfig::kTileM == 128 && SmokeConfig::kTileN == 128 && SmokeConfig::kTileK == 64 &&
                  SmokeConfig::kStages == 5,
              "keep sm90_bf16_gemm_smoke_name() in step with the config");

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// The TMA copy types the launch builds (K-contiguous [rows, K] bf16 views), spelled once so that
// the registry can name the very instance the launch runs.
using SmokeGmem = decltype(cute::make_tensor(cute::make_gmem_ptr(static_cast<SmokeConfig::Element*>(nullptr)),
                                             cute::make_shape(int(0), int(0)),
                                             cute::make_stride(int64_t(0), cute::Int<1>{})));
using SmokeTmaA = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{}, std::declval<SmokeGmem&>(),
                                               SmokeConfig::SmemLayoutAStage{}));
using SmokeTmaB = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{}, std::declval<SmokeGmem&>(),
                                               SmokeConfig::SmemLayoutBStage{}));

}  // namespace

const char* sm90_bf16_gemm_smoke_name() { return "sm90_bf16_gemm_smoke_128x128x64_s5"; }

cudaError_t sm90_bf16_gemm_smoke(const void* a, const void* b, void* c, int m, int n, int k,
                                 cudaStream_t stream) {
  using namespace cute;
  using Cfg = SmokeConfig;
  using Element = Cfg::Element;

  if (m < 0 || n < 0 || k < 0) return cudaErrorInvalidValue;
  if (k % 8 != 0) return cudaErrorInvalidValue;  // TMA: row stride K*2 bytes must be a multiple of 16
  if (m == 0 || n == 0) return cudaSuccess;
  if (c == nullptr || !aligned16(c)) return cudaErrorInvalidValue;
  if (k == 0) return cudaMemsetAsync(c, 0, size_t(m) * size_t(n) * sizeof(Element), stream);
  if (a == nullptr || b == nullptr || !aligned16(a) || !aligned16(b)) return cudaErrorInvalidValue;

  const int64_t grid_m = (int64_t(m) + Cfg::kTileM - 1) / Cfg::kTileM;
  const int64_t grid_n = (int64_t(n) + Cfg::kTileN - 1) / Cfg::kTileN;
  if (grid_n > 65535) return cudaErrorInvalidValue;  // gridDim.y limit (grid_m <= 2^24 always fits x)

  // Global views; the TMA descriptor takes shape/stride from them and its box from the one-stage
  // smem layout (128x64, 128B-swizzled). TMA zero-fills whatever of the box lies outside (M|N, K).
  auto* a_ptr = static_cast<Element*>(const_cast<void*>(a));
  auto* b_ptr = static_cast<Element*>(const_cast<void*>(b));
  Tensor gA = make_tensor(make_gmem_ptr(a_ptr), make_shape(m, k), make_stride(int64_t(k), Int<1>{}));
  Tensor gB = make_tensor(make_gmem_ptr(b_ptr), make_shape(n, k), make_stride(int64_t(k), Int<1>{}));
  auto tma_a = make_tma_copy(SM90_TMA_LOAD{}, gA, Cfg::SmemLayoutAStage{});
  auto tma_b = make_tma_copy(SM90_TMA_LOAD{}, gB, Cfg::SmemLayoutBStage{});

  static_assert(std::is_same_v<decltype(tma_a), SmokeTmaA> && std::is_same_v<decltype(tma_b), SmokeTmaB>,
                "the registry's instance is the one launched");
  auto kernel = &sm90_smoke::sm90_bf16_gemm_smoke_kernel<Cfg, SmokeTmaA, SmokeTmaB>;
  constexpr int kSmem = sm90_smoke::smem_bytes<Cfg>();
  // Above 48 KB a kernel must opt in; cheap enough to do on every call.
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (err != cudaSuccess) return err;

  const dim3 grid(unsigned(grid_m), unsigned(grid_n), 1);
  const dim3 block(Cfg::kThreads, 1, 1);
  kernel<<<grid, block, kSmem, stream>>>(tma_a, tma_b, static_cast<__nv_bfloat16*>(c), m, n, k);
  return cudaGetLastError();
}

void append_gemm_smoke_instances(KernelList* out) {
  out->push_back({"gemm_smoke", sm90_bf16_gemm_smoke_name(),
                  reinterpret_cast<const void*>(&sm90_smoke::sm90_bf16_gemm_smoke_kernel<SmokeConfig, SmokeTmaA, SmokeTmaB>)});
}

}  // namespace fusedmoe::kernels
