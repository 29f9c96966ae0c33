// The CUTLASS FP8 blockwise-scaled GEMM1 with the activation in its epilogue (cutlass_grouped_gemm.h,
// CutlassFp8GatedArgs): CUTLASS's cooperative 128x128x128 blockwise mainloop (the 128x128 weight
// blocks' scales applied per 128-K step in fp32, as in cutlass_fp8_block_gemm.cuh) over W1 in the
// epilogue's pairing order, and our GatedEpilogue (cutlass_gated_epilogue.cuh), which adds b1,
// applies the activation and writes H in bf16: no pre-activation rows, no activation pass. Its own
// translation unit.
//
// Scales. W1 as this GEMM reads it alternates gate and up rows in blocks of 8 (split halves), so a
// 128-row tile mixes two of the checkpoint's 128-row scale blocks: the mainloop takes one weight
// scale per 4 rows (Sm90BlockwiseScaleConfig<1, 4, 128>), re-laid per call from the checkpoint's
// [G, 2N/128, K/128] by the blockwise GEMM's scale kernel (launch_fp8_scales, blocks8_half = N).
// Not 8 rows: CUTLASS 4.2's mainloop copies a tile's weight scales with one warp whose lane t takes
// columns t, t + 32, t + 64, t + 96 and only lanes t < (scales per tile): with 16 scales per 128
// columns lanes 16-31 would skip blocks 2, 3, 6, 7, ... (a review reproduced the partition on the
// host). With 4 rows (32 scales) every lane copies and every block is loaded; a thread's columns
// 8j + 2(t % 4) + {0, 1} still meet one scale per 8-column block, so the K loop's work is the same.
#include <algorithm>
#include <string>

#include "kernels/gemm/cutlass_fp8_block_gemm.cuh"
#include "kernels/gemm/cutlass_gated_epilogue.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

namespace {

struct Fp8GatedGemm {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using ElementAB = cutlass::float_e4m3_t;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using TileShape = cute::Shape<cute::_128, cute::_128, cute::_128>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  static constexpr int kScaleM = 1;  // 1x128 activation groups
  static constexpr int kScaleN = 4;  // one weight scale per 4 rows (see above: not 8)
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<kScaleM, kScaleN, 128>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());
  using CollectiveEpilogue = cutlass::epilogue::collective::detail::Sm90TmaWarpSpecializedAdapter<GatedEpilogue>;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementAB, cute::tuple<LayoutA*, LayoutSFA*>, 16,
      ElementAB, cute::tuple<LayoutB*, LayoutSFB*>, 16,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Gemm::GemmKernel::InternalStrideA;
  using StrideB = typename Gemm::GemmKernel::InternalStrideB;
  using StrideD = typename Gemm::GemmKernel::InternalStrideD;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using TiledMma = typename CollectiveMainloop::TiledMma;
};

}  // namespace

cudaError_t run_fp8_gated(const CutlassFp8GatedArgs& a, cudaStream_t stream) {
  using G = Fp8GatedGemm;
  const int sms = device_sm_count();
  if (sms <= 0 || sms > kCutlassMaxSms) return cudaErrorInvalidValue;
  const int n_w = a.activation.gemm1_rows(a.n);
  const bool blocks8 = a.activation.gated() && !a.activation.interleaved;
  // the blockwise GEMM's view of the problem (problem N = W1's rows) for the scratch and the scales
  CutlassFp8BlockArgs b;
  b.a = a.a;
  b.a_scale = a.a_scale;
  b.a_scale_stride = a.a_scale_stride;
  b.w = a.w;
  b.w_scale = a.w_scale;
  b.w_scale_ue8m0 = a.w_scale_ue8m0;
  b.out = a.out;
  b.counts = a.counts;
  b.a_offsets = a.a_offsets;
  b.out_offsets = a.out_offsets;
  b.num_groups = a.num_groups;
  b.n = n_w;
  b.k = a.k;
  b.max_rows = a.max_rows;
  b.scratch = a.scratch;
  b.scratch_bytes = a.scratch_bytes;
  Fp8BlockArrays<G> arr = fp8_block_carve<G>(b);
  fp8_setup_groups_kernel<G><<<(a.num_groups + 127) / 128, 128, 0, stream>>>(
      arr, static_cast<const G::ElementAB*>(a.a), static_cast<const G::ElementAB*>(a.w),
      static_cast<G::ElementD*>(a.out), a.counts, a.a_offsets, a.out_offsets, a.num_groups, n_w, a.k, a.n);
  launch_fp8_scales(arr.sfa, arr.sfb, b, sms, stream, G::kScaleN, blocks8 ? a.n : 0);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  const GatedEpilogueArgs ep =
      gated_epilogue_args(reinterpret_cast<void* const*>(arr.ptr_d), a.bias, a.n, a.activation);
  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = sms;
  typename G::Gemm::Arguments ga{
      cutlass::gemm::GemmUniversalMode::kGrouped,
      {a.num_groups, arr.shapes, nullptr},
      {arr.ptr_a, arr.stride_a, arr.ptr_b, arr.stride_b, arr.ptr_sfa, arr.layout_sfa, arr.ptr_sfb, arr.layout_sfb},
      ep,
      hw};
  return launch_gemm<typename G::Gemm>(ga, arr.cutlass_workspace, arr.cutlass_workspace_bytes, stream, true);
}

size_t scratch_fp8_gated(int groups, int n_w, int k, int64_t max_rows) {
  return fp8_block_scratch<Fp8GatedGemm>(groups, n_w, k, max_rows);
}

void append_fp8_gated(KernelList* out, const char* name) { fp8_block_append<Fp8GatedGemm>(out, name); }

// The epilogue's pairing against CuTe's partition of this kernel's 128 x 128 tile, and that the
// mainloop's scale copy loads every scale block of a tile (host only).
std::string fp8_gated_layout_check() { return gated_layout_check_of<Fp8GatedGemm::TiledMma, 128, 128>(); }
std::string fp8_gated_scale_check() { return blockwise_scale_load_check<Fp8GatedGemm>(); }

}  // namespace fusedmoe::kernels::cutlass_grouped
