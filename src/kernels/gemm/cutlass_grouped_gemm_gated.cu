// The CUTLASS grouped GEMM1 with the activation in its epilogue (cutlass_grouped_gemm.h,
// CutlassGatedArgs): CUTLASS's cooperative 128x256x64 pointer-array mainloop and our
// GatedEpilogue (cutlass_gated_epilogue.cuh), its own translation unit; also the layout check of
// the epilogue's gate / up pairing (host code, no GPU needed) and the gate / up block copy.
#include <algorithm>
#include <cstdio>
#include <string>

#include "kernels/gemm/cutlass_gated_epilogue.cuh"
#include "kernels/gemm/cutlass_grouped_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

namespace {

struct GatedGemm {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using Element = cutlass::bfloat16_t;
  using ElementAB = Element;
  using ElementD = Element;
  static constexpr int kScalePtrs = 0;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  static constexpr int kAlign = 8;
  using TileShape = cute::Shape<cute::_128, cute::_256, cute::_64>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;

  using CollectiveEpilogue = cutlass::epilogue::collective::detail::Sm90TmaWarpSpecializedAdapter<GatedEpilogue>;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      Element, LayoutA*, kAlign,
      Element, LayoutB*, kAlign,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

  using StrideA = typename Gemm::GemmKernel::InternalStrideA;
  using StrideB = typename Gemm::GemmKernel::InternalStrideB;
  using StrideD = typename Gemm::GemmKernel::InternalStrideD;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
  using TiledMma = typename CollectiveMainloop::TiledMma;
};

// Group g: shape {counts[g], N_w, K}, A and W pointers and strides, and H's first row (row stride N).
__global__ void gated_setup_kernel(GroupArrays<GatedGemm> arr, const GatedGemm::Element* a, const GatedGemm::Element* w,
                                   GatedGemm::Element* h, const int32_t* counts, const int32_t* a_offsets,
                                   const int32_t* out_offsets, int groups, int n_w, int n_out, int k) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g < groups) set_group(arr, g, a, w, h, counts, a_offsets, out_offsets, n_w, k, n_out);
}

// W1 [G, 2N, K] (gate rows, then up rows) -> the same rows alternating in blocks of 8: row
// 16b + q <- gate row 8b + q (q < 8), up row 8b + q - 8 (q >= 8). One thread: 16 bytes of a row
// (`units` per row: any element size).
__global__ void __launch_bounds__(256) gate_up_blocks8_kernel(const uint4* w, uint4* out, int64_t rows, int n,
                                                              int units) {
  const int64_t total = rows * units;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / units;  // output row over all experts
    const int u = static_cast<int>(i - r * units);
    const int64_t e = r / (2 * n);
    const int rr = static_cast<int>(r - e * 2 * n);
    const int b = rr >> 4, q = rr & 15;
    const int src = q < 8 ? 8 * b + q : n + 8 * b + (q - 8);
    out[i] = w[(e * 2 * n + src) * units + u];
  }
}

}  // namespace

cudaError_t run_gated(const CutlassGatedArgs& a, cudaStream_t stream) {
  const int sms = device_sm_count();
  if (sms <= 0 || sms > kCutlassMaxSms) return cudaErrorInvalidValue;
  using G = GatedGemm;
  GroupArrays<G> arr = carve<G>(a.scratch, a.scratch_bytes, a.num_groups);
  const int n_w = a.activation.gemm1_rows(a.n);
  using E = G::Element;
  gated_setup_kernel<<<(a.num_groups + 127) / 128, 128, 0, stream>>>(
      arr, static_cast<const E*>(a.a), static_cast<const E*>(a.w), static_cast<E*>(a.out), a.counts, a.a_offsets,
      a.out_offsets, a.num_groups, n_w, a.n, a.k);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;

  const GatedEpilogueArgs ep =
      gated_epilogue_args(reinterpret_cast<void* const*>(arr.ptr_d), a.bias, a.n, a.activation);
  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = sms;
  typename G::Gemm::Arguments ga{cutlass::gemm::GemmUniversalMode::kGrouped,
                                 {a.num_groups, arr.shapes, nullptr},
                                 {arr.ptr_a, arr.stride_a, arr.ptr_b, arr.stride_b},
                                 ep,
                                 hw};
  return launch_gemm<typename G::Gemm>(ga, arr.cutlass_workspace, arr.cutlass_workspace_bytes, stream, true);
}

size_t scratch_gated(int groups) { return scratch_bytes<GatedGemm>(groups); }

void append_gated(KernelList* out, const char* name, const char* setup_name) {
  out->push_back({"cutlass_grouped", name, reinterpret_cast<const void*>(&cutlass::device_kernel<GatedGemm::Kernel>)});
  out->push_back({"cutlass_grouped", setup_name, reinterpret_cast<const void*>(&gated_setup_kernel)});
  out->push_back({"cutlass_grouped", "gate_up_blocks8", reinterpret_cast<const void*>(&gate_up_blocks8_kernel)});
}

cudaError_t run_gate_up_blocks8(const void* w, void* out, int64_t experts, int n, int units, cudaStream_t stream) {
  const int64_t total = experts * 2 * n * units;
  const int sms = std::max(device_sm_count(), 1);
  const int grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((total + 255) / 256, int64_t(sms) * 16)));
  gate_up_blocks8_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint4*>(w), static_cast<uint4*>(out),
                                                   experts * 2 * n, n, units);
  return cudaGetLastError();
}

// The epilogue's pairing against CuTe's partition of this kernel's 128 x 256 tile (host only).
std::string gated_layout_check() { return gated_layout_check_of<GatedGemm::TiledMma, 128, 256>(); }

}  // namespace fusedmoe::kernels::cutlass_grouped
