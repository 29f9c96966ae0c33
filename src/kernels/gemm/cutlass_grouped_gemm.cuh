// cutlass_grouped_gemm.cuh — one CUTLASS sm90 pointer-array grouped GEMM configuration (BF16 in,
// fp32 accumulation, BF16 out, no source C) with its device-side setup kernel. Contract in
// cutlass_grouped_gemm.h. Each configuration is instantiated in its own .cu file (each takes a
// minute or two of nvcc on one core).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/group_array_problem_shape.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/gemm/cutlass_grouped_gemm.h"

namespace fusedmoe::kernels::cutlass_grouped {

template <class TileShape_, class KernelSchedule_, class EpilogueSchedule_,
          class ClusterShape_ = cute::Shape<cute::_1, cute::_1, cute::_1>>
struct Bf16GroupedGemm {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;  // M, N, K per group
  using Element = cutlass::bfloat16_t;
  using ElementAB = Element;
  using ElementD = Element;
  static constexpr int kScalePtrs = 0;
  using LayoutA = cutlass::layout::RowMajor;     // rows of x / H, K contiguous
  using LayoutB = cutlass::layout::ColumnMajor;  // W [N, K], K contiguous
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlign = 8;  // 16 bytes
  using TileShape = TileShape_;
  // 1x1 by default: the group scheduler rounds each group's M tiles up to the cluster (2x1: an idle
  // CTA for a group with an odd tile count), in exchange for the weight tile multicast to both CTAs.
  using ClusterShape = ClusterShape_;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD*, kAlign,     // no source C
      Element, LayoutD*, kAlign,  // D
      EpilogueSchedule_,
      cutlass::epilogue::fusion::LinearCombination<Element, float, void, float>>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      Element, LayoutA*, kAlign,
      Element, LayoutB*, kAlign,
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

// The per-group arrays the kernel reads, carved from the caller's scratch (each 256-byte aligned).
// G names its operand types (ElementAB for A and B, ElementD for D) and kScalePtrs: the number of
// per-group float pointer arrays its epilogue reads (0 for BF16; 2 for the FP8 row scales).
template <class G>
struct GroupArrays {
  typename G::Shape* shapes;
  const typename G::ElementAB** ptr_a;
  const typename G::ElementAB** ptr_b;
  typename G::ElementD** ptr_d;
  typename G::StrideA* stride_a;
  typename G::StrideB* stride_b;
  typename G::StrideD* stride_d;
  float** scale_ptrs[2];  // [0], [1]: kScalePtrs of them carved, the rest null
  void* cutlass_workspace;
  size_t cutlass_workspace_bytes;
};

inline size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// Arrays first, the CUTLASS tensor-map workspace after them.
template <class G>
size_t group_arrays_bytes(int groups) {
  const size_t g = static_cast<size_t>(groups);
  return align256(g * sizeof(typename G::Shape)) + (3 + G::kScalePtrs) * align256(g * sizeof(void*)) +
         align256(g * sizeof(typename G::StrideA)) + align256(g * sizeof(typename G::StrideB)) +
         align256(g * sizeof(typename G::StrideD));
}

template <class G>
GroupArrays<G> carve(void* scratch, size_t bytes, int groups) {
  static_assert(G::kScalePtrs >= 0 && G::kScalePtrs <= 2);
  char* p = static_cast<char*>(scratch);
  const size_t g = static_cast<size_t>(groups);
  auto take = [&](size_t b) {
    char* r = p;
    p += align256(b);
    return r;
  };
  GroupArrays<G> a;
  a.shapes = reinterpret_cast<typename G::Shape*>(take(g * sizeof(typename G::Shape)));
  a.ptr_a = reinterpret_cast<const typename G::ElementAB**>(take(g * sizeof(void*)));
  a.ptr_b = reinterpret_cast<const typename G::ElementAB**>(take(g * sizeof(void*)));
  a.ptr_d = reinterpret_cast<typename G::ElementD**>(take(g * sizeof(void*)));
  a.stride_a = reinterpret_cast<typename G::StrideA*>(take(g * sizeof(typename G::StrideA)));
  a.stride_b = reinterpret_cast<typename G::StrideB*>(take(g * sizeof(typename G::StrideB)));
  a.stride_d = reinterpret_cast<typename G::StrideD*>(take(g * sizeof(typename G::StrideD)));
  for (int i = 0; i < 2; ++i) a.scale_ptrs[i] = i < G::kScalePtrs ? reinterpret_cast<float**>(take(g * sizeof(void*))) : nullptr;
  const size_t used = static_cast<size_t>(p - static_cast<char*>(scratch));
  a.cutlass_workspace = p;
  a.cutlass_workspace_bytes = bytes > used ? bytes - used : 0;
  return a;
}

// Group g's shape {counts[g], N, K}, pointers and packed strides (one thread per group). The output
// rows have out_n columns (default N; the GEMM1 with the activation in its epilogue writes H, N of
// W1's 2N rows).
template <class G>
__device__ __forceinline__ void set_group(const GroupArrays<G>& arr, int g, const typename G::ElementAB* a,
                                          const typename G::ElementAB* w, typename G::ElementD* out,
                                          const int32_t* counts, const int32_t* a_offsets, const int32_t* out_offsets,
                                          int n, int k, int out_n = 0) {
  const int m = counts[g];
  if (out_n <= 0) out_n = n;
  arr.shapes[g] = typename G::Shape(m, n, k);
  arr.ptr_a[g] = a + static_cast<int64_t>(a_offsets[g]) * k;
  arr.ptr_b[g] = w + static_cast<int64_t>(g) * n * k;
  arr.ptr_d[g] = out + static_cast<int64_t>(out_offsets[g]) * out_n;
  arr.stride_a[g] = cutlass::make_cute_packed_stride(typename G::StrideA{}, cute::make_shape(m, k, 1));
  arr.stride_b[g] = cutlass::make_cute_packed_stride(typename G::StrideB{}, cute::make_shape(n, k, 1));
  arr.stride_d[g] = cutlass::make_cute_packed_stride(typename G::StrideD{}, cute::make_shape(m, out_n, 1));
}

template <class G>
__global__ void setup_groups_kernel(GroupArrays<G> arr, const typename G::ElementAB* a, const typename G::ElementAB* w,
                                    typename G::ElementD* out, const int32_t* counts, const int32_t* a_offsets,
                                    const int32_t* out_offsets, int groups, int n, int k) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g < groups) set_group(arr, g, a, w, out, counts, a_offsets, out_offsets, n, k);
}

int device_sm_count();  // cutlass_grouped_gemm.cu: cached per device

// The workspace checked against what CUTLASS asks for (and with `check`, the arguments against what
// the kernel can implement: our gated epilogue's own checks), then the launch.
template <class Gemm>
cudaError_t launch_gemm(const typename Gemm::Arguments& ga, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream, bool check = false) {
  Gemm gemm;
  if (Gemm::get_workspace_size(ga) > workspace_bytes) return cudaErrorInvalidValue;
  if (check && gemm.can_implement(ga) != cutlass::Status::kSuccess) return cudaErrorInvalidValue;
  if (gemm.initialize(ga, workspace, stream) != cutlass::Status::kSuccess) return cudaErrorInvalidValue;
  if (gemm.run(stream) != cutlass::Status::kSuccess) {
    const cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaErrorLaunchFailure;
  }
  return cudaGetLastError();
}

// D = 1 * acc (no source), then launch_gemm.
template <class Gemm>
cudaError_t initialize_and_run(typename Gemm::Arguments& ga, void* workspace, size_t workspace_bytes,
                               cudaStream_t stream) {
  ga.epilogue.thread.alpha = 1.f;
  ga.epilogue.thread.beta = 0.f;
  return launch_gemm<Gemm>(ga, workspace, workspace_bytes, stream);
}

template <class G>
cudaError_t run(const CutlassGroupedArgs& args, cudaStream_t stream) {
  const int sms = device_sm_count();
  if (sms <= 0 || sms > kCutlassMaxSms) return cudaErrorInvalidValue;
  GroupArrays<G> arr = carve<G>(args.scratch, args.scratch_bytes, args.num_groups);
  using E = typename G::Element;
  setup_groups_kernel<G><<<(args.num_groups + 127) / 128, 128, 0, stream>>>(
      arr, static_cast<const E*>(args.a), static_cast<const E*>(args.w), static_cast<E*>(args.out), args.counts,
      args.a_offsets, args.out_offsets, args.num_groups, args.n, args.k);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;

  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = sms;
  typename G::Gemm::Arguments ga{cutlass::gemm::GemmUniversalMode::kGrouped,
                                 {args.num_groups, arr.shapes, nullptr},
                                 {arr.ptr_a, arr.stride_a, arr.ptr_b, arr.stride_b},
                                 {{}, nullptr, nullptr, arr.ptr_d, arr.stride_d},
                                 hw};
  return initialize_and_run<typename G::Gemm>(ga, arr.cutlass_workspace, arr.cutlass_workspace_bytes, stream);
}

template <class G>
size_t scratch_bytes(int groups) {
  // CUTLASS's workspace: tensor maps per SM (A, B and the epilogue's), bounded by kCutlassMaxSms.
  return group_arrays_bytes<G>(groups) + align256(static_cast<size_t>(kCutlassMaxSms) * 8 * 128);
}

}  // namespace fusedmoe::kernels::cutlass_grouped
