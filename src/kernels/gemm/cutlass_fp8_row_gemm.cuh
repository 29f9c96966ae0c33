// cutlass_fp8_row_gemm.cuh — CUTLASS sm90 pointer-array grouped GEMM, e4m3 x e4m3 with "row"
// scales applied in the epilogue (cutlass_grouped_gemm.h, CutlassFp8RowArgs): cooperative tiles
// (below) of 128 K, fp32 accumulation promoted every 128 K (CUTLASS's FP8 mainloop,
// not the fast-accumulation one), and the epilogue
//   D[m, n] = bf16( sa(m) * (acc[m, n] * sw(n)) )
// as an epilogue visitor tree: sw a row-vector broadcast (per output column; one value per group
// for per-tensor weight scales, through CUTLASS's dynamic scalar/vector broadcast), sa a column-
// vector broadcast (per token row; one value for per-tensor activation scales). Both read the
// caller's scale arrays through per-group pointers: nothing is re-laid. One template per
// CutlassFp8Config, each instantiated in its own cutlass_fp8_row_gemm*.cu (about a minute of nvcc).
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/gemm/cutlass_grouped_gemm.cuh"  // GroupArrays, carve, set_group, device_sm_count
#include "kernels/gemm/cutlass_grouped_gemm.h"

namespace fusedmoe::kernels::cutlass_grouped {

// Cooperative 128x128x128 tiles (both consumer warpgroups on one tile, 64 rows each). Measured on the
// H200 (session 19, call 2) against ping-pong 128x64x128 (each warpgroup its own tile, one's epilogue
// under the other's main loop): cooperative faster for GEMM1 and GEMM2 of both row-scaled cases at
// 1024-16384 tokens, GEMM2 (K = 192) included (qwen235-tp8-fp8c at 4096 tokens: 274 vs 353 us). With
// the FP8 promotion a warpgroup holds two fp32 fragments of its part of the tile: 128x128 per
// warpgroup (cooperative 256x128 or 128x256) spilled ~0.9 KB per thread. The other configurations of
// CutlassFp8Config (1x2 clusters, ping-pong 64x128) are instantiated beside it, not yet measured.
template <class TileShape_, class ClusterShape_, class KernelSchedule_, class EpilogueSchedule_>
struct Fp8RowGemm {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using ElementAB = cutlass::float_e4m3_t;
  using ElementD = cutlass::bfloat16_t;
  static constexpr int kScalePtrs = 2;  // GroupArrays::scale_ptrs: [0] sw, [1] sa (per group)
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

  // sw: along N (dynamic: true = per column, false = one value), per-group pointer, L stride 0
  using WScale = cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, float*, float,
                                                             cute::Stride<cute::_0, bool, int64_t>, 1>;
  // sa: along M (true = per row, false = one value)
  using AScale = cutlass::epilogue::fusion::Sm90ColBroadcast<0, TileShape, float*, float,
                                                             cute::Stride<bool, cute::_0, int64_t>, 1>;
  using AccTimesW = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, float, float, kRound>,
      cutlass::epilogue::fusion::Sm90AccFetch, WScale>;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<cutlass::multiplies, ElementD, float, kRound>, AScale, AccTimesW>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD*, 8, ElementD, LayoutD*, 8,
      EpilogueSchedule_, Fusion>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementAB, LayoutA*, 16,
      ElementAB, LayoutB*, 16,
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

using Fp8RowCoop128 =
    Fp8RowGemm<cute::Shape<cute::_128, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_1, cute::_1>,
               cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
               cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
using Fp8RowCoop128C12 =
    Fp8RowGemm<cute::Shape<cute::_128, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_2, cute::_1>,
               cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
               cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative>;
using Fp8RowPing64C12 =
    Fp8RowGemm<cute::Shape<cute::_64, cute::_128, cute::_128>, cute::Shape<cute::_1, cute::_2, cute::_1>,
               cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong,
               cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong>;

// One thread per group: shape, pointers and strides (set_group), and the two scale pointers:
// sw = w_scale + g * N (per channel) or + g (per tensor); sa = a_scale + a_offsets[g] (per token)
// or a_scale (per tensor).
template <class G>
__global__ void fp8_row_setup_kernel(GroupArrays<G> arr, const typename G::ElementAB* a,
                                     const typename G::ElementAB* w, typename G::ElementD* out, const float* a_scale,
                                     bool per_token, const float* w_scale, bool per_channel, const int32_t* counts,
                                     const int32_t* a_offsets, const int32_t* out_offsets, int groups, int n, int k) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g >= groups) return;
  set_group(arr, g, a, w, out, counts, a_offsets, out_offsets, n, k);
  arr.scale_ptrs[0][g] = const_cast<float*>(w_scale + (per_channel ? static_cast<int64_t>(g) * n : g));
  arr.scale_ptrs[1][g] = const_cast<float*>(a_scale + (per_token ? a_offsets[g] : 0));
}

template <class G>
size_t fp8_row_scratch(int groups) {
  return group_arrays_bytes<G>(groups) + align256(static_cast<size_t>(kCutlassMaxSms) * 8 * 128);
}

// Arguments checked by launch_cutlass_fp8_row_gemm (cutlass_grouped_gemm.cu), max_rows > 0.
template <class G>
cudaError_t fp8_row_run(const CutlassFp8RowArgs& args, cudaStream_t stream) {
  const int sms = device_sm_count();
  if (sms <= 0 || sms > kCutlassMaxSms) return cudaErrorInvalidValue;
  GroupArrays<G> arr = carve<G>(args.scratch, args.scratch_bytes, args.num_groups);
  using E = typename G::ElementAB;
  fp8_row_setup_kernel<G><<<(args.num_groups + 127) / 128, 128, 0, stream>>>(
      arr, static_cast<const E*>(args.a), static_cast<const E*>(args.w), static_cast<typename G::ElementD*>(args.out),
      args.a_scale, args.a_scale_per_token, args.w_scale, args.w_scale_per_channel, args.counts, args.a_offsets,
      args.out_offsets, args.num_groups, args.n, args.k);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = sms;
  typename G::Gemm::Arguments ga;
  ga.mode = cutlass::gemm::GemmUniversalMode::kGrouped;
  ga.problem_shape = {args.num_groups, arr.shapes, nullptr};
  ga.mainloop = {arr.ptr_a, arr.stride_a, arr.ptr_b, arr.stride_b};
  ga.epilogue.ptr_C = nullptr;
  ga.epilogue.ptr_D = arr.ptr_d;
  ga.epilogue.dD = arr.stride_d;
  ga.hw_info = hw;
  // EVT arguments, children first: sa (column broadcast), then {acc, sw, multiply}, then multiply
  auto& th = ga.epilogue.thread;
  th = {};
  th.op_0.ptr_col = arr.scale_ptrs[1];
  th.op_0.null_default = 1.f;
  th.op_0.dCol = cute::Stride<bool, cute::_0, int64_t>{args.a_scale_per_token, {}, 0};
  th.op_1.op_1.ptr_row = arr.scale_ptrs[0];
  th.op_1.op_1.null_default = 1.f;
  th.op_1.op_1.dRow = cute::Stride<cute::_0, bool, int64_t>{{}, args.w_scale_per_channel, 0};
  typename G::Gemm gemm;
  if (G::Gemm::get_workspace_size(ga) > arr.cutlass_workspace_bytes) return cudaErrorInvalidValue;
  if (gemm.initialize(ga, arr.cutlass_workspace, stream) != cutlass::Status::kSuccess) return cudaErrorInvalidValue;
  if (gemm.run(stream) != cutlass::Status::kSuccess) {
    e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaErrorLaunchFailure;
  }
  return cudaGetLastError();
}

template <class G>
void fp8_row_append(KernelList* out, const char* name) {
  out->push_back({"cutlass_grouped", name, reinterpret_cast<const void*>(&cutlass::device_kernel<typename G::Kernel>)});
  out->push_back({"cutlass_grouped", std::string(name) + "<setup>",
                  reinterpret_cast<const void*>(&fp8_row_setup_kernel<G>)});
}

}  // namespace fusedmoe::kernels::cutlass_grouped
