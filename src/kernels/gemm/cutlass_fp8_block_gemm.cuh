// cutlass_fp8_block_gemm.cuh — CUTLASS's sm90 pointer-array blockwise-scaled FP8 grouped GEMM
// (cutlass_grouped_gemm.h, CutlassFp8BlockArgs): e4m3 x e4m3 with fp32 block scales applied per
// 128-K step inside the main loop (1x128 activation groups, 128x128 weight blocks), BF16 out. One
// template per tile / cluster / schedule (CutlassFp8Config); each configuration is instantiated in
// its own translation unit (cutlass_fp8_block_gemm*.cu, a minute or two of nvcc each).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <cute/atom/copy_traits_sm80.hpp>
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/blockwise_scale_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/gemm/cutlass_grouped_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm.h"

namespace fusedmoe::kernels::cutlass_grouped {

// With the promotion a consumer warpgroup holds two fp32 fragments of its part of the tile, so a
// warpgroup's part stays at 64 x 128 (cooperative 128x128: two warpgroups on one tile; ping-pong
// 64x128: each warpgroup its own tile); 128 x 128 per warpgroup spilled (session 19).
template <class TileShape_, class ClusterShape_, class KernelSchedule_, class EpilogueSchedule_>
struct Fp8BlockGemm {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using ElementAB = cutlass::float_e4m3_t;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  using TileShape = TileShape_;
  // 1x2: the two CTAs of a cluster compute neighbouring N tiles of the same rows, so each activation
  // tile is loaded once and multicast to both (the group scheduler rounds a group's N tiles up to
  // even: every 128-block N of the suite has an even count at 128 columns).
  using ClusterShape = ClusterShape_;
  static constexpr int kScaleM = 1;    // activation rows per scale (1x128 groups)
  static constexpr int kScaleN = 128;  // weight rows per scale (the checkpoint's 128-row blocks)
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<kScaleM, kScaleN, 128>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD*, 8, ElementD, LayoutD*, 8,
      EpilogueSchedule_,
      cutlass::epilogue::fusion::LinearCombination<ElementD, float, void, float>>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementAB, cute::tuple<LayoutA*, LayoutSFA*>, 16,
      ElementAB, cute::tuple<LayoutB*, LayoutSFB*>, 16,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule_>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Gemm::GemmKernel::InternalStrideA;
  using StrideB = typename Gemm::GemmKernel::InternalStrideB;
  using StrideD = typename Gemm::GemmKernel::InternalStrideD;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
};

using Fp8BlockCoop128 =
    Fp8BlockGemm<cute::Shape<cute::_128, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_1, cute::_1>,
                 cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum,
                 cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
using Fp8BlockCoop128C12 =
    Fp8BlockGemm<cute::Shape<cute::_128, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_2, cute::_1>,
                 cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum,
                 cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
using Fp8BlockPing64C12 =
    Fp8BlockGemm<cute::Shape<cute::_64, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_2, cute::_1>,
                 cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpongFP8BlockScaledAccum,
                 cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong>;

// Host check (no GPU) that CUTLASS 4.2's blockwise mainloop loads every scale a tile of G needs: its
// producer copies a tile's activation and weight scales into shared memory with one warp (a 32-thread
// tiled copy of single floats over the tile's rows / columns), where lane t copies only while
// t < the scales per tile. Replays that partition for an M / N tile in the middle of a problem and
// lists the scale blocks no lane loads (empty: all loaded). 16 weight scales per 128 columns, for
// one, leave blocks 2, 3, 6, 7, ... unloaded (lanes 16-31 hold them).
template <class G>
std::string blockwise_scale_load_check() {
  using namespace cute;
  using TileShape = typename G::TileShape;
  constexpr int kTM = size<0>(TileShape{}), kTN = size<1>(TileShape{}), kTK = size<2>(TileShape{});
  const int m = 3 * kTM, n = 3 * kTN, k = 2 * kTK;
  using Atom = Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<float>, float>;
  auto tiled = make_tiled_copy(Atom{}, Layout<Shape<_32>>{}, Layout<Shape<_1>>{});
  std::string missing;
  // (the scale tensors hold their own indices, so a copied element says which block it is)
  auto check = [&](auto layout, auto step, int per_tile, const char* what) {
    std::vector<float> buf(static_cast<size_t>(cosize(layout)));
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
    Tensor full = make_tensor(make_gmem_ptr(buf.data()), layout);
    Tensor tiles = local_tile(full, TileShape{}, make_coord(_, _, _), step);  // (BLK, BLK_K, tiles, k tiles, l)
    Tensor one = tiles(_, _, 1, 0, 0);                                          // tile 1, k tile 0
    std::vector<int> distinct;  // the tile's scale indices, in order
    for (int i = 0; i < size(one); ++i) {
      const int v = static_cast<int>(one(i));
      if (std::find(distinct.begin(), distinct.end(), v) == distinct.end()) distinct.push_back(v);
    }
    std::vector<char> loaded(distinct.size(), 0);
    for (int t = 0; t < 32; ++t) {
      if (t >= per_tile) continue;
      Tensor part = filter_zeros(tiled.get_slice(t).partition_S(one));
      for (int i = 0; i < size(part); ++i) {
        const auto at = std::find(distinct.begin(), distinct.end(), static_cast<int>(part(i)));
        if (at != distinct.end()) loaded[static_cast<size_t>(at - distinct.begin())] = 1;
      }
    }
    for (size_t b = 0; b < distinct.size(); ++b)
      if (!loaded[b]) missing += std::string(missing.empty() ? "" : ", ") + what + " block " + std::to_string(b);
  };
  constexpr int kMs = kTM / G::kScaleM;
  constexpr int kNs = kTN / G::kScaleN;
  check(G::ScaleConfig::tile_atom_to_shape_SFA(make_shape(m, n, k, 1)), Step<_1, X, _1>{}, kMs, "activation");
  check(G::ScaleConfig::tile_atom_to_shape_SFB(make_shape(m, n, k, 1)), Step<X, _1, _1>{}, kNs, "weight");
  return missing;
}

template <class G>
struct Fp8BlockArrays {
  typename G::Shape* shapes;
  const typename G::ElementAB** ptr_a;
  const typename G::ElementAB** ptr_b;
  typename G::ElementD** ptr_d;
  typename G::StrideA* stride_a;
  typename G::StrideB* stride_b;
  typename G::StrideD* stride_d;
  const float** ptr_sfa;
  const float** ptr_sfb;
  typename G::LayoutSFA* layout_sfa;
  typename G::LayoutSFB* layout_sfb;
  float* sfa;  // packed activation scales
  float* sfb;  // packed weight scales
  void* cutlass_workspace;
  size_t cutlass_workspace_bytes;
};

struct Carver {
  char* p;
  template <class T>
  T* take(size_t count) {
    T* r = reinterpret_cast<T*>(p);
    p += align256(count * sizeof(T));
    return r;
  }
};

inline size_t fp8_cutlass_ws_bound() { return align256(static_cast<size_t>(kCutlassMaxSms) * 8 * 128); }

template <class G>
size_t fp8_block_arrays_bytes(int groups, int n, int k, int64_t max_rows) {
  const size_t g = static_cast<size_t>(groups);
  return align256(g * sizeof(typename G::Shape)) + 5 * align256(g * sizeof(void*)) +
         align256(g * sizeof(typename G::StrideA)) + align256(g * sizeof(typename G::StrideB)) +
         align256(g * sizeof(typename G::StrideD)) + align256(g * sizeof(typename G::LayoutSFA)) +
         align256(g * sizeof(typename G::LayoutSFB)) + align256(static_cast<size_t>(k / 128) * max_rows * 4) +
         align256(g * static_cast<size_t>(n / G::kScaleN) * (k / 128) * 4);
}

template <class G>
Fp8BlockArrays<G> fp8_block_carve(const CutlassFp8BlockArgs& a) {
  Carver c{static_cast<char*>(a.scratch)};
  const size_t g = static_cast<size_t>(a.num_groups);
  Fp8BlockArrays<G> r;
  r.shapes = c.take<typename G::Shape>(g);
  r.ptr_a = c.take<const typename G::ElementAB*>(g);
  r.ptr_b = c.take<const typename G::ElementAB*>(g);
  r.ptr_d = c.take<typename G::ElementD*>(g);
  r.stride_a = c.take<typename G::StrideA>(g);
  r.stride_b = c.take<typename G::StrideB>(g);
  r.stride_d = c.take<typename G::StrideD>(g);
  r.ptr_sfa = c.take<const float*>(g);
  r.ptr_sfb = c.take<const float*>(g);
  r.layout_sfa = c.take<typename G::LayoutSFA>(g);
  r.layout_sfb = c.take<typename G::LayoutSFB>(g);
  r.sfa = c.take<float>(static_cast<size_t>(a.k / 128) * a.max_rows);
  r.sfb = c.take<float>(g * static_cast<size_t>(a.n / G::kScaleN) * (a.k / 128));
  const size_t used = static_cast<size_t>(c.p - static_cast<char*>(a.scratch));
  r.cutlass_workspace = c.p;
  r.cutlass_workspace_bytes = a.scratch_bytes > used ? a.scratch_bytes - used : 0;
  return r;
}

__device__ __forceinline__ int fp8_group_of(const int32_t* po, int groups, int64_t r) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (po[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

// One thread per group: shapes, pointers, strides, scale pointers and layouts. The output rows have
// n_out columns (0: N; the GEMM1 with the activation in its epilogue writes H, N of W1's 2N rows).
template <class G>
__global__ void fp8_setup_groups_kernel(Fp8BlockArrays<G> arr, const typename G::ElementAB* a,
                                        const typename G::ElementAB* w, typename G::ElementD* out,
                                        const int32_t* counts, const int32_t* a_offsets, const int32_t* out_offsets,
                                        int groups, int n, int k, int n_out = 0) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g >= groups) return;
  const int m = counts[g];
  if (n_out <= 0) n_out = n;
  arr.shapes[g] = typename G::Shape(m, n, k);
  arr.ptr_a[g] = a + static_cast<int64_t>(a_offsets[g]) * k;
  arr.ptr_b[g] = w + static_cast<int64_t>(g) * n * k;
  arr.ptr_d[g] = out + static_cast<int64_t>(out_offsets[g]) * n_out;
  arr.stride_a[g] = cutlass::make_cute_packed_stride(typename G::StrideA{}, cute::make_shape(m, k, 1));
  arr.stride_b[g] = cutlass::make_cute_packed_stride(typename G::StrideB{}, cute::make_shape(n, k, 1));
  arr.stride_d[g] = cutlass::make_cute_packed_stride(typename G::StrideD{}, cute::make_shape(m, n_out, 1));
  arr.ptr_sfa[g] = arr.sfa + static_cast<int64_t>(k / 128) * a_offsets[g];
  arr.ptr_sfb[g] = arr.sfb + static_cast<int64_t>(g) * (n / G::kScaleN) * (k / 128);
  arr.layout_sfa[g] = G::ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(m, n, k, 1));
  arr.layout_sfb[g] = G::ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(m, n, k, 1));
}

// Activation scales: padded row r of group g (i = r - a_offsets[g] < counts[g]), K block kb ->
// sfa[(K/128) * a_offsets[g] + kb * counts[g] + i]. Weight scales: [G, N/128, K/128] ->
// [G, K/128, N/gran_n] float (UE8M0 bytes: 2^(b - 127)), each block of gran_n weight rows taking
// its 128-row block's scale (blocks8_half = N: W1's rows alternating in blocks of 8 gate and 8 up
// rows, gran_n dividing 8: cutlass_fp8_gated_gemm.cu). The same for every configuration (only the two
// float arrays are written): one kernel, launched by cutlass_fp8_block_gemm.cu's function.
void launch_fp8_scales(float* sfa, float* sfb, const CutlassFp8BlockArgs& args, int sms, cudaStream_t stream,
                       int gran_n = 128, int blocks8_half = 0);
const void* fp8_scales_kernel_ptr();

template <class G>
cudaError_t fp8_block_run(const CutlassFp8BlockArgs& args, cudaStream_t stream) {
  const int sms = device_sm_count();
  if (sms <= 0 || sms > kCutlassMaxSms) return cudaErrorInvalidValue;
  Fp8BlockArrays<G> arr = fp8_block_carve<G>(args);
  fp8_setup_groups_kernel<G><<<(args.num_groups + 127) / 128, 128, 0, stream>>>(
      arr, static_cast<const typename G::ElementAB*>(args.a), static_cast<const typename G::ElementAB*>(args.w),
      static_cast<typename G::ElementD*>(args.out), args.counts, args.a_offsets, args.out_offsets, args.num_groups,
      args.n, args.k);
  launch_fp8_scales(arr.sfa, arr.sfb, args, sms, stream);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = sms;
  typename G::Gemm::Arguments ga{
      cutlass::gemm::GemmUniversalMode::kGrouped,
      {args.num_groups, arr.shapes, nullptr},
      {arr.ptr_a, arr.stride_a, arr.ptr_b, arr.stride_b, arr.ptr_sfa, arr.layout_sfa, arr.ptr_sfb, arr.layout_sfb},
      {{}, nullptr, nullptr, arr.ptr_d, arr.stride_d},
      hw};
  return initialize_and_run<typename G::Gemm>(ga, arr.cutlass_workspace, arr.cutlass_workspace_bytes, stream);
}

template <class G>
size_t fp8_block_scratch(int groups, int n, int k, int64_t max_rows) {
  return fp8_block_arrays_bytes<G>(groups, n, k, max_rows) + fp8_cutlass_ws_bound();
}

template <class G>
void fp8_block_append(KernelList* out, const char* name) {
  out->push_back({"cutlass_grouped", name, reinterpret_cast<const void*>(&cutlass::device_kernel<typename G::Kernel>)});
  out->push_back({"cutlass_grouped", std::string(name) + "<setup>",
                  reinterpret_cast<const void*>(&fp8_setup_groups_kernel<G>)});
}

}  // namespace fusedmoe::kernels::cutlass_grouped
