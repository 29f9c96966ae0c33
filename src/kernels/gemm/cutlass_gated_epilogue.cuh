// cutlass_gated_epilogue.cuh — our epilogue for CUTLASS's sm90 pointer-array grouped GEMM1 that
// applies the expert activation to the accumulators and writes H directly (cutlass_grouped_gemm.h,
// CutlassGatedArgs): no pre-activation rows in memory, no activation pass.
//
// The mainloop is CUTLASS's, unchanged (problem N = the weight rows the GEMM sees: 2N gated, N not).
// This class is an "operator" epilogue behind CUTLASS's Sm90TmaWarpSpecializedAdapter (no shared
// memory, no TMA store): each consumer thread stores its own outputs from registers.
//
// Gate / up pairing. In the accumulator fragment of a 64 x BLK_N WGMMA (one per consumer
// warpgroup) a thread holds, for its rows m and m + 8, the columns 8j + 2(t % 4) + {0, 1} for every
// j: value index i = c + 2h + 4j (c: the column pair, h: row + 8, j: the 8-column block). So
//   kPairBlocks8  (gate and up rows of W1 alternating in blocks of 8: gate_up_blocks8): gate column
//                 n (block j even) and its up column n + 8 (block j + 1) are values i and i + 4;
//                 H column = (n / 16) * 8 + n % 8;
//   kPairAdjacent (interleaved checkpoints: g0, u0, g1, u1, ...): gate n (even) and up n + 1 are
//                 values i and i + 1; H column = n / 2;
//   kPlain        (activations without a gate): value i alone; H column = n.
// The layout is checked on the host over every thread of the tile (cutlass_gated_layout_check(),
// run by the CPU tests), not assumed silently.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/detail.hpp>
#include <cutlass/epilogue/dispatch_policy.hpp>
#include <cutlass/epilogue/thread/linear_combination.h>

#include "kernels/common/activation_math.cuh"

namespace fusedmoe::kernels::cutlass_grouped {

enum class GatePairing : int { kPlain = 0, kPairAdjacent = 1, kPairBlocks8 = 8 };

// The activation with a fast quotient (__fdividef: MUFU.RCP and a multiply, ~2 ulp) where its form
// allows, instead of activation_math.cuh's IEEE division (a correction sequence and a slow-path
// branch per value): this epilogue runs after the main loop with the tensor cores idle, 64 values
// per thread and tile, so its instruction count is the kernel's overhead (H200, session 43 call 4,
// ncu: 1640 instructions per consumer thread and tile with the IEEE form, the kernel 10 % slower than
// CUTLASS's own GEMM1). Denominators overflow to inf only where the quotient is 0 (or NaN for an
// infinite input), as with the division. GELU (erf) and the non-gated kinds keep activate_ct.
template <int kKind>
__device__ __forceinline__ float activate_fast(float g, float u, float alpha, float limit) {
  if constexpr (kKind == int(ActivationKind::kSiluGated)) {
    return __fdividef(g, 1.f + __expf(-g)) * u;
  } else if constexpr (kKind == int(ActivationKind::kGeluTanhGated)) {
    const float z2 = 1.5957691216057308f * (g + 0.044715f * g * g * g);
    return __fdividef(g, 1.f + __expf(-z2)) * u;
  } else if constexpr (kKind == int(ActivationKind::kClampedSwiglu)) {
    const float gc = fminf(g, limit);
    const float uc = fminf(fmaxf(u, -limit), limit);
    return __fdividef(gc, 1.f + __expf(-gc)) * uc;
  } else if constexpr (kKind == int(ActivationKind::kSwigluOai)) {
    const float gc = fminf(g, limit);
    const float uc = fminf(fmaxf(u, -limit), limit);
    return (uc + 1.f) * __fdividef(gc, 1.f + __expf(-alpha * gc));
  } else {
    return sm90_grouped::activate_ct<kKind>(g, u, alpha, limit);
  }
}

// Arguments == Params (device side, by value in the kernel's parameters).
struct GatedEpilogueArgs {
  __nv_bfloat16** ptr_out = nullptr;  // [G] device: H's first row of group g (row stride n_out)
  const float* bias = nullptr;        // [G, n_bias] b1 in the checkpoint's row order, or null
  int n_out = 0;                      // N: H columns
  int n_bias = 0;                     // b1 values per expert (2N gated, N not)
  int pairing = 0;                    // GatePairing
  int kind = 0;                       // ActivationKind
  float alpha = 0.f, limit = 0.f;
};

// The arguments for H [rows, n] bf16 at the per-group pointers `ptr_out` (the setup kernel's ptr_d),
// W1 in the pairing order `activation` implies (split halves: blocks of 8), b1 [G, gemm1_rows(n)] or
// null.
inline GatedEpilogueArgs gated_epilogue_args(void* const* ptr_out, const float* bias, int n,
                                             const Activation& activation) {
  GatedEpilogueArgs ep;
  ep.ptr_out = reinterpret_cast<__nv_bfloat16**>(const_cast<void**>(ptr_out));
  ep.bias = bias;
  ep.n_out = n;
  ep.n_bias = activation.gemm1_rows(n);
  ep.pairing = !activation.gated()     ? int(GatePairing::kPlain)
               : activation.interleaved ? int(GatePairing::kPairAdjacent)
                                        : int(GatePairing::kPairBlocks8);
  ep.kind = static_cast<int>(activation.kind);
  ep.alpha = activation.alpha;
  ep.limit = activation.limit;
  return ep;
}

class GatedEpilogue {
 public:
  // The types CUTLASS's kernel and device adapter name (C is never read: no source).
  using EpilogueSchedule = cutlass::epilogue::PtrArrayNoSmemWarpSpecialized;
  using DispatchPolicy = EpilogueSchedule;
  using ElementC = cutlass::bfloat16_t;
  using ElementD = cutlass::bfloat16_t;
  using ElementOutput = ElementD;
  using ElementAccumulator = float;
  using ElementCompute = float;
  using StrideC = cute::Stride<int64_t, cute::Int<1>, cute::Int<0>>*;
  using InternalStrideC = cute::remove_pointer_t<StrideC>;
  using StrideD = StrideC;
  using InternalStrideD = InternalStrideC;
  using ThreadEpilogueOp = cutlass::epilogue::thread::LinearCombination<ElementD, 1, float, float>;  // (named only)
  using GmemTiledCopyC = void;
  using GmemTiledCopyD = void;

  struct SharedStorage {};
  using TensorMapStorage = SharedStorage;
  using Arguments = GatedEpilogueArgs;
  using Params = GatedEpilogueArgs;

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args, void*) {
    return args;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&, int) {
    return 0;
  }
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, Arguments const&, void*, cudaStream_t,
                                              cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }
  template <class ProblemShape>
  static bool can_implement(ProblemShape const&, Arguments const& args) {
    const bool pairing_ok = args.pairing == int(GatePairing::kPlain) || args.pairing == int(GatePairing::kPairAdjacent) ||
                            args.pairing == int(GatePairing::kPairBlocks8);
    return args.ptr_out != nullptr && args.n_out > 0 && args.n_out % 8 == 0 && pairing_ok;
  }

  CUTLASS_HOST_DEVICE explicit GatedEpilogue(Params const& p) : params_(p) {}

  CUTLASS_DEVICE bool is_source_needed() { return false; }

  // One output tile: rows m < M of the group, W1 columns n < N_w (the GEMM's problem N).
  template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
            class TiledMma, class ResidueMNK>
  CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem_shape_mnkl, BlockShapeMNK blk_shape_mnk,
                                 BlockCoordMNKL blk_coord_mnkl, cute::Tensor<FrgEngine, FrgLayout> const& acc,
                                 TiledMma tiled_mma, ResidueMNK, int thread_idx, char*) {
    using namespace cute;
    static_assert(is_static<FrgLayout>::value, "static accumulator layout");
    // The value-index arithmetic below holds for one 64 x BLK_N atom per warpgroup (cooperative
    // tiles: BLK_M = 64 x consumer warpgroups): MMA_M = MMA_N = 1.
    static_assert(size<1>(FrgLayout{}) == 1 && size<2>(FrgLayout{}) == 1, "one WGMMA atom per warpgroup tile");
    static_assert(size<0>(FrgLayout{}) % 8 == 0, "whole 8-column blocks per thread");
    constexpr int kVals = decltype(size(acc))::value;

    const int m_rows = static_cast<int>(get<0>(problem_shape_mnkl));
    const int n_w = static_cast<int>(get<1>(problem_shape_mnkl));
    const auto m_coord = get<0>(blk_coord_mnkl);
    const auto n_coord = get<1>(blk_coord_mnkl);
    const int group = static_cast<int>(get<3>(blk_coord_mnkl));

    Tensor c_mn = local_tile(make_identity_tensor(make_shape(m_rows, n_w)), take<0, 2>(blk_shape_mnk),
                             make_coord(m_coord, n_coord));  // (BLK_M, BLK_N) -> (m, n)
    Tensor tc = tiled_mma.get_thread_slice(thread_idx).partition_C(c_mn);

    __nv_bfloat16* out = params_.ptr_out[group];
    const int ld = params_.n_out;
    const float* bias = params_.bias != nullptr ? params_.bias + static_cast<int64_t>(group) * params_.n_bias : nullptr;
    const float alpha = params_.alpha, limit = params_.limit;

    if (params_.pairing == int(GatePairing::kPairBlocks8)) {
      // (b1 resolved once per tile: the loop below is instantiated with and without it)
      auto blocks8 = [&](auto kind, auto with_bias) {
        constexpr int kK = decltype(kind)::value;
        constexpr bool kBias = decltype(with_bias)::value;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < kVals; i += 8) {  // j even: values i .. i + 3 gate, i + 4 .. i + 7 up
          CUTLASS_PRAGMA_UNROLL
          for (int h = 0; h < 2; ++h) {
            const int ig = i + 2 * h;
            const int m = get<0>(tc(ig));
            const int n = get<1>(tc(ig));
            if (m >= m_rows || n >= n_w) continue;
            const int o = (n >> 4) * 8 + (n & 7);  // even: the pair (o, o + 1) is 4-byte aligned
            float g0 = acc(ig), g1 = acc(ig + 1), u0 = acc(ig + 4), u1 = acc(ig + 5);
            if constexpr (kBias) {
              g0 += bias[o];
              g1 += bias[o + 1];
              u0 += bias[ld + o];
              u1 += bias[ld + o + 1];
            }
            const __nv_bfloat162 v =
                __floats2bfloat162_rn(activate_fast<kK>(g0, u0, alpha, limit), activate_fast<kK>(g1, u1, alpha, limit));
            *reinterpret_cast<__nv_bfloat162*>(out + static_cast<int64_t>(m) * ld + o) = v;
          }
        }
      };
      sm90_grouped::with_activation<true>(params_.kind, [&](auto kind) {
        if (bias != nullptr) blocks8(kind, cute::true_type{});
        else blocks8(kind, cute::false_type{});
      });
    } else if (params_.pairing == int(GatePairing::kPairAdjacent)) {
      sm90_grouped::with_activation<true>(params_.kind, [&](auto kind) {
        constexpr int kK = decltype(kind)::value;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < kVals; i += 2) {  // values i (gate, column n even) and i + 1 (up, n + 1)
          const int m = get<0>(tc(i));
          const int n = get<1>(tc(i));
          if (m >= m_rows || n >= n_w) continue;
          const int o = n >> 1;
          float g = acc(i), u = acc(i + 1);
          if (bias != nullptr) {
            g += bias[n];
            u += bias[n + 1];
          }
          out[static_cast<int64_t>(m) * ld + o] = __float2bfloat16_rn(activate_fast<kK>(g, u, alpha, limit));
        }
      });
    } else {
      sm90_grouped::with_activation<false>(params_.kind, [&](auto kind) {
        constexpr int kK = decltype(kind)::value;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < kVals; i += 2) {  // values i, i + 1: columns n, n + 1 (n even)
          const int m = get<0>(tc(i));
          const int n = get<1>(tc(i));
          if (m >= m_rows || n >= n_w) continue;
          float a0 = acc(i), a1 = acc(i + 1);
          if (bias != nullptr) {
            a0 += bias[n];
            a1 += bias[n + 1];
          }
          *reinterpret_cast<__nv_bfloat162*>(out + static_cast<int64_t>(m) * ld + n) =
              __floats2bfloat162_rn(sm90_grouped::activate_ct<kK>(a0, 0.f, alpha, limit),
                                    sm90_grouped::activate_ct<kK>(a1, 0.f, alpha, limit));
        }
      });
    }
  }

 private:
  Params params_;
};

// The epilogue's value-index pairing against CuTe's own partition of a kM x kN tile, for every
// consumer thread (host only): every (m, n) of the tile exactly once; i + 1 = (m, n + 1) for even
// i, i + 2 = (m + 8, n), and for an even 8-column block j = i / 4: i + 4 = (m, n + 8) with n % 16 < 8.
template <class TiledMma, int kM, int kN>
std::string gated_layout_check_of() {
  using namespace cute;
  TiledMma mma;
  std::string err;
  static_assert(decltype(size(TiledMma{}))::value == 256, "two consumer warpgroups");
  static int seen[kM][kN];
  for (auto& row : seen)
    for (int& v : row) v = 0;
  auto c_mn = make_identity_tensor(make_shape(Int<kM>{}, Int<kN>{}));
  for (int t = 0; t < 256 && err.empty(); ++t) {
    auto tc = mma.get_thread_slice(t).partition_C(c_mn);
    constexpr int kVals = decltype(size(tc))::value;
    if (kVals != kM * kN / 256) return "values per thread: " + std::to_string(kVals);
    if (size<1>(tc) != 1 || size<2>(tc) != 1) return "more than one WGMMA atom per warpgroup tile";
    for (int i = 0; i < kVals; ++i) {
      const int m = get<0>(tc(i)), n = get<1>(tc(i));
      if (m < 0 || m >= kM || n < 0 || n >= kN) return "coordinate out of the tile";
      ++seen[m][n];
      char buf[160];
      auto expect = [&](int idx, int em, int en, const char* what) {
        if (get<0>(tc(idx)) != em || get<1>(tc(idx)) != en) {
          std::snprintf(buf, sizeof buf, "thread %d value %d at (%d, %d): value %d is not %s", t, i, m, n, idx, what);
          err = buf;
        }
      };
      if (i % 2 == 0) {
        if (n % 2 != 0) err = "an even value index on an odd column";
        expect(i + 1, m, n + 1, "(m, n + 1)");
      }
      if ((i / 2) % 2 == 0) expect(i + 2, m + 8, n, "(m + 8, n)");
      if ((i / 4) % 2 == 0) {
        if (n % 16 >= 8) err = "an even 8-column block not at n % 16 < 8";
        expect(i + 4, m, n + 8, "(m, n + 8)");
      }
      if (!err.empty()) return err;
    }
  }
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n)
      if (seen[m][n] != 1) return "tile element (" + std::to_string(m) + ", " + std::to_string(n) + ") held " +
                                  std::to_string(seen[m][n]) + " times";
  return err;
}

}  // namespace fusedmoe::kernels::cutlass_grouped
