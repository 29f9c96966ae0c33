// The weight-streaming probe (informational, session 35): how fast the copy engine streams cold
// weights into a ring of shared-memory stages that a trivial consumer frees at once (no math), in
// the access patterns a grouped GEMM could use. It separates the memory system from the GEMM
// kernels' consumers:
//   box64x128: 2D boxes of 64 rows x 128 bytes walking K (our Swap-AB kernels' weight order: each
//              stage touches 64 rows, K bytes apart),
//   box32x256: 32 rows x 256 bytes (twice the run per row, the same 8 KB),
//   bulk8k:    8 KB contiguous bulk copies (a weight layout pre-tiled so that a stage is contiguous).
// Each CTA streams whole 64-row tiles (64 x K bytes) of a 2 GiB matrix, far past the 50 MB L2.
// Varied: CTAs per SM and ring depth (the bytes in flight per SM), K (the row stride). Then the
// GEMM's other per-stage work, one at a time: a 4 KB activation box per stage from a 2 MB buffer
// that stays in L2 (a 32-token tile of BF16), and a consumer that holds each stage for a while
// before freeing it (the tensor core's round trip).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "gpu_test_util.h"

namespace {

constexpr int kStageBytes = 8192;
constexpr int kMaxStages = 24;
constexpr int kActBufBytes = 2 << 20;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* b, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, uint32_t phase) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra WAIT_%=;\n}\n" ::"r"(smem_u32(b)),
      "r"(phase)
      : "memory");
}

// mode 0 / 1: 2D boxes (tensor map `tm`, box {128, 64} or {256, 32} bytes); mode 2: 1D bulk copies.
__global__ void __launch_bounds__(64, 1)
    stream_probe_kernel(const __grid_constant__ CUtensorMap tm, const uint8_t* base, int64_t tiles, int k_bytes,
                        int stages, int mode, const uint8_t* act, int act_bytes, int hold_cycles) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ alignas(8) uint64_t full[kMaxStages], empty[kMaxStages];
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int steps = 64 * k_bytes / kStageBytes;  // stages per 64-row tile
  if (threadIdx.x == 0) {  // producer
    int stage = 0;
    uint32_t phase = 0;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      for (int i = 0; i < steps; ++i) {
        mbar_wait(&empty[stage], phase ^ 1u);
        const int stage_bytes = kStageBytes + act_bytes;
        mbar_expect_tx(&full[stage], uint32_t(stage_bytes));
        const uint32_t dst = smem_u32(smem + stage * stage_bytes);
        if (act_bytes > 0) {
          const uint8_t* a = act + (int64_t(t) * steps + i) * act_bytes % kActBufBytes;
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                  dst + kStageBytes),
              "l"(a), "r"(act_bytes), "r"(smem_u32(&full[stage]))
              : "memory");
        }
        if (mode == 2) {
          const uint8_t* src = base + t * 64 * int64_t(k_bytes) + int64_t(i) * kStageBytes;
          asm volatile(
              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
              "l"(src), "r"(kStageBytes), "r"(smem_u32(&full[stage]))
              : "memory");
        } else {
          // box {128 B, 64 rows}: step i is K bytes [128 i, 128 i + 128) of the tile's 64 rows;
          // box {256 B, 32 rows}: the tile's two 32-row halves at K bytes [256 j, 256 j + 256)
          const int x = mode == 0 ? i * 128 : (i >> 1) * 256;
          const int y = int(t * 64) + (mode == 0 ? 0 : (i & 1) * 32);
          asm volatile(
              "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
              "[%4];" ::"r"(dst),
              "l"(&tm), "r"(x), "r"(y), "r"(smem_u32(&full[stage]))
              : "memory");
        }
        if (++stage == stages) { stage = 0; phase ^= 1u; }
      }
    }
  } else if (threadIdx.x == 32) {  // consumer: frees each stage as soon as it is full
    int stage = 0;
    uint32_t phase = 0;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      for (int i = 0; i < steps; ++i) {
        mbar_wait(&full[stage], phase);
        if (hold_cycles > 0) {
          const long long t0 = clock64();
          while (clock64() - t0 < hold_cycles) {
          }
        }
        mbar_arrive(&empty[stage]);
        if (++stage == stages) { stage = 0; phase ^= 1u; }
      }
    }
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  void* pfn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pfn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(pfn);
}

}  // namespace

TEST(StreamProbe, Informational) {
  const auto enc = encoder();
  ASSERT_NE(enc, nullptr);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const size_t bytes = size_t(2) << 30;
  fusedmoe::gputest::DeviceBuffer buf(bytes);
  ASSERT_NE(buf.get(), nullptr);
  cudaMemset(buf.get(), 0x11, bytes);
  FM_CUDA_CHECK(cudaFuncSetAttribute(stream_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     kMaxStages * kStageBytes));
  static_assert(8 * (kStageBytes + 4096) <= kMaxStages * kStageBytes, "the act sweep fits the opt-in");
  fusedmoe::gputest::DeviceBuffer act(kActBufBytes);
  cudaMemset(act.get(), 0x22, kActBufBytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  // GB/s of weights of one configuration: the median of 3 timed launches after a warm-up
  auto gbs_of = [&](const CUtensorMap& tm, int64_t tiles, int k_bytes, int per_sm, int stages, int mode, int act_bytes,
                    int hold) {
    const size_t smem = size_t(stages) * size_t(kStageBytes + act_bytes);
    std::vector<float> ms;
    for (int rep = 0; rep < 4; ++rep) {
      cudaEventRecord(e0);
      stream_probe_kernel<<<sms * per_sm, 64, smem>>>(tm, buf.as<uint8_t>(), tiles, k_bytes, stages, mode,
                                                      act.as<uint8_t>(), act_bytes, hold);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float m = 0;
      cudaEventElapsedTime(&m, e0, e1);
      if (rep > 0) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    return double(tiles) * 64 * k_bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
  };
  const char* names[3] = {"box64x128", "box32x256", "bulk8k"};
  for (int k_bytes : {4096, 14336}) {
    const int64_t tiles = int64_t(bytes / (size_t(64) * size_t(k_bytes)));
    const uint64_t rows = uint64_t(tiles) * 64;
    for (int mode = 0; mode < 3; ++mode) {
      CUtensorMap tm{};
      if (mode < 2) {
        const uint64_t dims[2] = {uint64_t(k_bytes), rows};
        const uint64_t strides[1] = {uint64_t(k_bytes)};
        const uint32_t box[2] = {mode == 0 ? 128u : 256u, mode == 0 ? 64u : 32u};
        const uint32_t es[2] = {1, 1};
        ASSERT_EQ(enc(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, buf.get(), dims, strides, box, es,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                  CUDA_SUCCESS);
      }
      for (int per_sm : {1, 2, 3, 4}) {
        for (int stages : {4, 6, 8, 12, 16, 24}) {
          if (per_sm * stages * kStageBytes > 220 * 1024) continue;
          const double gbs = gbs_of(tm, tiles, k_bytes, per_sm, stages, mode, 0, 0);
          FM_CUDA_CHECK(cudaGetLastError());
          std::printf("[probe] %-10s K=%5d B  %d CTAs/SM x %2d stages (%3d KB in flight/SM): %6.0f GB/s\n", names[mode],
                      k_bytes, per_sm, stages, per_sm * stages * kStageBytes / 1024, gbs);
        }
      }
    }
  }
  // the GEMM's other per-stage work: activation boxes from L2, a consumer holding each stage
  {
    const int k_bytes = 4096;
    const int64_t tiles = int64_t(bytes / (size_t(64) * size_t(k_bytes)));
    const uint64_t dims[2] = {uint64_t(k_bytes), uint64_t(tiles) * 64};
    const uint64_t strides[1] = {uint64_t(k_bytes)};
    const uint32_t box[2] = {128u, 64u};
    const uint32_t es[2] = {1, 1};
    CUtensorMap tm{};
    ASSERT_EQ(enc(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, buf.get(), dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              CUDA_SUCCESS);
    struct V { int per_sm, stages, act_bytes, hold; };
    for (int mode : {0, 2})
      for (const V v : {V{2, 8, 0, 0}, V{2, 8, 4096, 0}, V{2, 8, 0, 500}, V{2, 8, 0, 1000}, V{2, 8, 0, 2000},
                        V{2, 8, 4096, 1000}, V{3, 6, 4096, 0}, V{3, 6, 4096, 1000}, V{4, 4, 4096, 1000},
                        V{2, 12, 0, 2000}}) {
        const double gbs = gbs_of(tm, tiles, k_bytes, v.per_sm, v.stages, mode, v.act_bytes, v.hold);
        FM_CUDA_CHECK(cudaGetLastError());
        std::printf("[probe] %-10s K=%5d B  %d CTAs/SM x %2d stages, + %4d B act per stage from L2, consumer holds "
                    "each stage %4d cycles: %6.0f GB/s of weights\n",
                    names[mode], k_bytes, v.per_sm, v.stages, v.act_bytes, v.hold, gbs);
      }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}
