// sm90_bf16_gemm_smoke.cuh — smallest honest Hopper GEMM: TMA -> smem ring -> WGMMA -> registers -> C.
//
//   C[M,N] (bf16, row-major) = A[M,K] (bf16, K contiguous) · B[N,K]^T (bf16, K contiguous), fp32 accumulation.
//
// One CTA computes one 128x128 tile of C. Warp-specialised, 3 warpgroups (384 threads):
//   warpgroup 0 (producer): one elected thread walks K in 64-wide steps; for each step it waits until
//     ring slot `s` is empty, arms the slot's "full" mbarrier with the byte count, and issues two TMA
//     loads (A tile 128x64, B tile 128x64) that complete on that mbarrier. Out-of-bounds rows/columns
//     (ragged M, N, K) are zero-filled by TMA, so the main loop never needs predication.
//   warpgroups 1..2 (consumers): each owns 64 rows of the tile; for each K step it waits on "full",
//     issues 4 WGMMA 64x128x16 (A and B both read from swizzled smem), keeps one WGMMA batch in flight,
//     and releases the previous slot on its "empty" mbarrier once that batch has retired.
//   Epilogue: consumers convert fp32 accumulators to bf16 and store straight to global, predicated
//     on M and N (bf16x2 stores when the pair is in bounds and aligned).
//
// Everything is CuTe building blocks (SM90_TMA_LOAD/make_tma_copy, SM90 GMMA atoms, tiled MMA) plus
// cutlass::arch mbarrier wrappers; no CollectiveBuilder.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include <cute/tensor.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/bfloat16.h>

namespace fusedmoe::kernels::sm90_smoke {

template <int TileM_, int TileN_, int TileK_, int Stages_>
struct GemmConfig {
  using Element = cutlass::bfloat16_t;
  using Accum = float;

  static constexpr int kTileM = TileM_;
  static constexpr int kTileN = TileN_;
  static constexpr int kTileK = TileK_;
  static constexpr int kStages = Stages_;
  static_assert(kTileM == 128, "two consumer warpgroups x 64 rows");
  static_assert(kTileK * sizeof(Element) == 128, "one 128B swizzle row per K step");
  static_assert(kStages >= 3, "need >= 3 stages to overlap TMA with WGMMA");

  static constexpr int kConsumerWarpgroups = kTileM / 64;
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);  // producer WG + consumer WGs

  using TileShape = cute::Shape<cute::Int<kTileM>, cute::Int<kTileN>, cute::Int<kTileK>>;

  // K-major smem tiles with the 128B swizzle: the layout both TMA writes and WGMMA descriptors
  // read, so no bank conflicts and no register staging between them.
  using SmemLayoutAtom = cute::GMMA::Layout_K_SW128_Atom<Element>;
  using SmemLayoutA = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kTileM>, cute::Int<kTileK>, cute::Int<kStages>>{}));
  using SmemLayoutB = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kTileN>, cute::Int<kTileK>, cute::Int<kStages>>{}));
  // One stage, used on the host to shape the TMA box.
  using SmemLayoutAStage = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kTileM>, cute::Int<kTileK>>{}));
  using SmemLayoutBStage = decltype(cute::tile_to_shape(
      SmemLayoutAtom{}, cute::Shape<cute::Int<kTileN>, cute::Int<kTileK>>{}));

  // 64xNx16 WGMMA, A and B from smem, both K-major ("TN"); tiled 2x along M, one atom per consumer WG.
  using MmaAtom = cute::SM90_64x128x16_F32BF16BF16_SS<cute::GMMA::Major::K, cute::GMMA::Major::K>;
  static_assert(kTileN == 128, "MmaAtom is 64x128");
  using TiledMma = decltype(cute::make_tiled_mma(
      MmaAtom{}, cute::Layout<cute::Shape<cute::Int<kConsumerWarpgroups>, cute::_1, cute::_1>>{}));

  // Bytes one stage's two TMA loads deposit; TMA counts the full box even where it zero-fills.
  static constexpr uint32_t kStageBytes =
      uint32_t((kTileM + kTileN) * kTileK * sizeof(Element));

  // Register split (setmaxnreg): producer gives its registers to the consumers.
  // 128*40 + 256*232 = 64512 <= 65536.
  static constexpr uint32_t kProducerRegs = 40;
  static constexpr uint32_t kConsumerRegs = 232;
};

template <class Cfg>
struct SharedStorage {
  // 1024-byte alignment: the 128B swizzle pattern repeats every 8 rows x 128 B = 1024 B, and both
  // TMA and the WGMMA descriptors assume each tile starts on a pattern boundary.
  alignas(1024) cute::ArrayEngine<typename Cfg::Element, cute::cosize_v<typename Cfg::SmemLayoutA>> a;
  alignas(1024) cute::ArrayEngine<typename Cfg::Element, cute::cosize_v<typename Cfg::SmemLayoutB>> b;
  alignas(8) uint64_t full[Cfg::kStages];   // TMA -> consumers: slot filled (tx-count barrier)
  alignas(8) uint64_t empty[Cfg::kStages];  // consumers -> TMA: slot may be overwritten
};

// Dynamic smem to request: the storage plus slack to realign the base to 1024 bytes.
template <class Cfg>
constexpr int smem_bytes() {
  return int(sizeof(SharedStorage<Cfg>)) + 1024;
}

template <class Cfg, class TmaA, class TmaB>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    sm90_bf16_gemm_smoke_kernel(CUTE_GRID_CONSTANT TmaA const tma_a,
                                CUTE_GRID_CONSTANT TmaB const tma_b,
                                __nv_bfloat16* __restrict__ c, int m, int n, int k) {
#if defined(CUTLASS_ARCH_MMA_SM90A_ENABLED)
  using namespace cute;
  using Element = typename Cfg::Element;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  constexpr int kStages = Cfg::kStages;
  constexpr int kConsumerWarps = Cfg::kConsumerWarpgroups * 4;

  extern __shared__ uint8_t smem_raw[];
  // The dynamic smem base is only guaranteed 16-byte aligned; round up to 1024 (slack is requested).
  const uint32_t smem_base = cute::cast_smem_ptr_to_uint(smem_raw);
  auto& ss = *reinterpret_cast<SharedStorage<Cfg>*>(smem_raw + ((1024u - (smem_base & 1023u)) & 1023u));

  // warp-uniform role indices (shfl makes the compiler see them as uniform)
  const int warp_group = __shfl_sync(0xffffffff, int(threadIdx.x) / 128, 0);
  const int warp_in_group = __shfl_sync(0xffffffff, (int(threadIdx.x) / 32) % 4, 0);
  const int lane = int(threadIdx.x) % 32;

  if (threadIdx.x == 0) {
    CUTE_UNROLL
    for (int s = 0; s < kStages; ++s) {
      Barrier::init(&ss.full[s], 1);                // one arrive (with expect_tx) by the producer
      Barrier::init(&ss.empty[s], kConsumerWarps);  // lane 0 of every consumer warp
    }
    cutlass::arch::fence_barrier_init();  // make the inits visible to the async (TMA) proxy
  }
  __syncthreads();  // the only CTA-wide barrier: the roles diverge below

  const int m_blk = int(blockIdx.x);
  const int n_blk = int(blockIdx.y);
  const int k_tiles = (k + Cfg::kTileK - 1) / Cfg::kTileK;  // host guarantees k > 0

  // smem views: (BM,BK,PIPE) / (BN,BK,PIPE)
  Tensor sA = make_tensor(make_smem_ptr(ss.a.begin()), typename Cfg::SmemLayoutA{});
  Tensor sB = make_tensor(make_smem_ptr(ss.b.begin()), typename Cfg::SmemLayoutB{});

  if (warp_group == 0) {
    // ---------------- producer ----------------
    cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    if (warp_in_group == 0 && cute::elect_one_sync()) {
      cute::prefetch_tma_descriptor(tma_a.get_tma_descriptor());
      cute::prefetch_tma_descriptor(tma_b.get_tma_descriptor());

      // TMA coordinate tensors over the whole problem, tiled: (BM,BK,k_tiles) / (BN,BK,k_tiles)
      Tensor mA = tma_a.get_tma_tensor(make_shape(m, k));
      Tensor mB = tma_b.get_tma_tensor(make_shape(n, k));
      Tensor gA = local_tile(mA, select<0, 2>(typename Cfg::TileShape{}), make_coord(m_blk, _));
      Tensor gB = local_tile(mB, select<1, 2>(typename Cfg::TileShape{}), make_coord(n_blk, _));
      // No cluster / multicast: CTA coordinate 0 in a 1-CTA layout.
      auto [tAgA, tAsA] = tma_partition(tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA), group_modes<0, 2>(gA));
      auto [tBgB, tBsB] = tma_partition(tma_b, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sB), group_modes<0, 2>(gB));

      int stage = 0;
      uint32_t phase = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        // Wait for the consumers to free the slot. A fresh mbarrier is in phase 0, so waiting on
        // parity 1 returns at once: the first pass over the ring does not block.
        Barrier::wait(&ss.empty[stage], phase ^ 1u);
        Barrier::arrive_and_expect_tx(&ss.full[stage], Cfg::kStageBytes);
        copy(tma_a.with(ss.full[stage]), tAgA(_, kt), tAsA(_, stage));
        copy(tma_b.with(ss.full[stage]), tBgB(_, kt), tBsB(_, stage));
        if (++stage == kStages) { stage = 0; phase ^= 1u; }
      }
    }
  } else {
    // ---------------- consumers ----------------
    cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
    const int mma_thread = int(threadIdx.x) - 128;

    typename Cfg::TiledMma tiled_mma;
    auto thr_mma = tiled_mma.get_thread_slice(mma_thread);
    Tensor tCsA = thr_mma.partition_A(sA);          // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCsB = thr_mma.partition_B(sB);          // (MMA,MMA_N,MMA_K,PIPE)
    Tensor tCrA = thr_mma.make_fragment_A(tCsA);    // smem descriptors, not data
    Tensor tCrB = thr_mma.make_fragment_B(tCsB);
    Tensor accum = partition_fragment_C(tiled_mma, select<0, 1>(typename Cfg::TileShape{}));  // fp32 regs

    // First K step overwrites the (uninitialised) accumulators; later ones add.
    tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;

    int stage = 0;
    uint32_t phase = 0;
    int prev_stage = -1;
    for (int kt = 0; kt < k_tiles; ++kt) {
      Barrier::wait(&ss.full[stage], phase);  // TMA bytes for this slot have landed

      warpgroup_fence_operand(accum);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), accum);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      // Keep this batch in flight; wait only for the previous one, whose slot can then be refilled.
      warpgroup_wait<1>();
      warpgroup_fence_operand(accum);
      if (prev_stage >= 0 && lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[prev_stage]);

      prev_stage = stage;
      if (++stage == kStages) { stage = 0; phase ^= 1u; }
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(accum);
    // (the last slot need not be released: nothing is loaded after it)

    // ---------------- epilogue: fp32 -> bf16, predicated direct stores ----------------
    Tensor cC = make_identity_tensor(select<0, 1>(typename Cfg::TileShape{}));  // (BM,BN) -> (m,n)
    Tensor tCcC = thr_mma.partition_C(cC);
    const int m0 = m_blk * Cfg::kTileM;
    const int n0 = n_blk * Cfg::kTileN;
    const int m_res = m - m0;
    const int n_res = n - n0;
    __nv_bfloat16* c_tile = c + int64_t(m0) * n + n0;

    // The GMMA accumulator layout gives each thread pairs of adjacent columns (v, v+1); store them
    // as one bf16x2 when the pair is in bounds and 4-byte aligned (n even), else element by element.
    static_assert(decltype(size(accum))::value % 2 == 0);
    CUTE_UNROLL
    for (int i = 0; i < size(accum); i += 2) {
      const int r0 = get<0>(tCcC(i)), c0 = get<1>(tCcC(i));
      const int r1 = get<0>(tCcC(i + 1)), c1 = get<1>(tCcC(i + 1));
      const bool pair = (r1 == r0) && (c1 == c0 + 1) && ((n & 1) == 0) && ((c0 & 1) == 0);
      if (pair) {
        if (r0 < m_res && c1 < n_res) {
          *reinterpret_cast<__nv_bfloat162*>(c_tile + int64_t(r0) * n + c0) =
              __floats2bfloat162_rn(accum(i), accum(i + 1));
        } else if (r0 < m_res && c0 < n_res) {
          c_tile[int64_t(r0) * n + c0] = __float2bfloat16_rn(accum(i));
        }
      } else {
        if (r0 < m_res && c0 < n_res) c_tile[int64_t(r0) * n + c0] = __float2bfloat16_rn(accum(i));
        if (r1 < m_res && c1 < n_res) c_tile[int64_t(r1) * n + c1] = __float2bfloat16_rn(accum(i + 1));
      }
    }
  }
#else
  // Built for an architecture without sm_90a features: this kernel must never run there.
#if defined(__CUDA_ARCH__)
  __trap();
#endif
#endif
}

}  // namespace fusedmoe::kernels::sm90_smoke
