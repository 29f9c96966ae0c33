// The CUTLASS FP8 blockwise-scaled grouped GEMM (cutlass_grouped_gemm.h, CutlassFp8BlockArgs):
// cooperative 128x128x128 tiles, e4m3 x e4m3 with fp32 block scales per 128-K step, BF16 out.
#include <algorithm>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

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
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

namespace {

struct Fp8Block {
  using ProblemShape = cutlass::gemm::GroupProblemShape<cute::Shape<int, int, int>>;
  using ElementAB = cutlass::float_e4m3_t;
  using ElementD = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  using TileShape = cute::Shape<cute::_128, cute::_128, cute::_128>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<1, 128, 128>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD*, 8, ElementD, LayoutD*, 8,
      cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative,
      cutlass::epilogue::fusion::LinearCombination<ElementD, float, void, float>>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementAB, cute::tuple<LayoutA*, LayoutSFA*>, 16,
      ElementAB, cute::tuple<LayoutB*, LayoutSFB*>, 16,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperativeFP8BlockScaledAccum>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using StrideA = typename Gemm::GemmKernel::InternalStrideA;
  using StrideB = typename Gemm::GemmKernel::InternalStrideB;
  using StrideD = typename Gemm::GemmKernel::InternalStrideD;
  using Shape = typename ProblemShape::UnderlyingProblemShape;
};

struct Fp8Arrays {
  Fp8Block::Shape* shapes;
  const Fp8Block::ElementAB** ptr_a;
  const Fp8Block::ElementAB** ptr_b;
  Fp8Block::ElementD** ptr_d;
  Fp8Block::StrideA* stride_a;
  Fp8Block::StrideB* stride_b;
  Fp8Block::StrideD* stride_d;
  const float** ptr_sfa;
  const float** ptr_sfb;
  Fp8Block::LayoutSFA* layout_sfa;
  Fp8Block::LayoutSFB* layout_sfb;
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

size_t cutlass_ws_bound() { return align256(static_cast<size_t>(kCutlassMaxSms) * 8 * 128); }

size_t arrays_bytes(int groups, int n, int k, int64_t max_rows) {
  const size_t g = static_cast<size_t>(groups);
  return align256(g * sizeof(Fp8Block::Shape)) + 5 * align256(g * sizeof(void*)) +
         align256(g * sizeof(Fp8Block::StrideA)) + align256(g * sizeof(Fp8Block::StrideB)) +
         align256(g * sizeof(Fp8Block::StrideD)) + align256(g * sizeof(Fp8Block::LayoutSFA)) +
         align256(g * sizeof(Fp8Block::LayoutSFB)) + align256(static_cast<size_t>(k / 128) * max_rows * 4) +
         align256(g * static_cast<size_t>(n / 128) * (k / 128) * 4);
}

Fp8Arrays carve(const CutlassFp8BlockArgs& a) {
  Carver c{static_cast<char*>(a.scratch)};
  const size_t g = static_cast<size_t>(a.num_groups);
  Fp8Arrays r;
  r.shapes = c.take<Fp8Block::Shape>(g);
  r.ptr_a = c.take<const Fp8Block::ElementAB*>(g);
  r.ptr_b = c.take<const Fp8Block::ElementAB*>(g);
  r.ptr_d = c.take<Fp8Block::ElementD*>(g);
  r.stride_a = c.take<Fp8Block::StrideA>(g);
  r.stride_b = c.take<Fp8Block::StrideB>(g);
  r.stride_d = c.take<Fp8Block::StrideD>(g);
  r.ptr_sfa = c.take<const float*>(g);
  r.ptr_sfb = c.take<const float*>(g);
  r.layout_sfa = c.take<Fp8Block::LayoutSFA>(g);
  r.layout_sfb = c.take<Fp8Block::LayoutSFB>(g);
  r.sfa = c.take<float>(static_cast<size_t>(a.k / 128) * a.max_rows);
  r.sfb = c.take<float>(g * static_cast<size_t>(a.n / 128) * (a.k / 128));
  const size_t used = static_cast<size_t>(c.p - static_cast<char*>(a.scratch));
  r.cutlass_workspace = c.p;
  r.cutlass_workspace_bytes = a.scratch_bytes > used ? a.scratch_bytes - used : 0;
  return r;
}

__device__ __forceinline__ int group_of(const int32_t* po, int groups, int64_t r) {
  int lo = 0, hi = groups;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (po[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

// One thread per group: shapes, pointers, strides, scale pointers and layouts.
__global__ void fp8_setup_groups_kernel(Fp8Arrays arr, const Fp8Block::ElementAB* a, const Fp8Block::ElementAB* w,
                                        Fp8Block::ElementD* out, const int32_t* counts, const int32_t* a_offsets,
                                        const int32_t* out_offsets, int groups, int n, int k) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g >= groups) return;
  const int m = counts[g];
  arr.shapes[g] = Fp8Block::Shape(m, n, k);
  arr.ptr_a[g] = a + static_cast<int64_t>(a_offsets[g]) * k;
  arr.ptr_b[g] = w + static_cast<int64_t>(g) * n * k;
  arr.ptr_d[g] = out + static_cast<int64_t>(out_offsets[g]) * n;
  arr.stride_a[g] = cutlass::make_cute_packed_stride(Fp8Block::StrideA{}, cute::make_shape(m, k, 1));
  arr.stride_b[g] = cutlass::make_cute_packed_stride(Fp8Block::StrideB{}, cute::make_shape(n, k, 1));
  arr.stride_d[g] = cutlass::make_cute_packed_stride(Fp8Block::StrideD{}, cute::make_shape(m, n, 1));
  arr.ptr_sfa[g] = arr.sfa + static_cast<int64_t>(k / 128) * a_offsets[g];
  arr.ptr_sfb[g] = arr.sfb + static_cast<int64_t>(g) * (n / 128) * (k / 128);
  arr.layout_sfa[g] = Fp8Block::ScaleConfig::tile_atom_to_shape_SFA(cute::make_shape(m, n, k, 1));
  arr.layout_sfb[g] = Fp8Block::ScaleConfig::tile_atom_to_shape_SFB(cute::make_shape(m, n, k, 1));
}

// Activation scales: padded row r of group g (i = r - a_offsets[g] < counts[g]), K block kb ->
// sfa[(K/128) * a_offsets[g] + kb * counts[g] + i]. Weight scales: [G, N/128, K/128] ->
// [G, K/128, N/128] float (UE8M0 bytes: 2^(b - 127)).
__global__ void fp8_scales_kernel(Fp8Arrays arr, const float* a_scale, int64_t a_stride, const void* w_scale,
                                  bool ue8m0, const int32_t* counts, const int32_t* a_offsets, int groups, int n,
                                  int k, int64_t max_rows) {
  const int kb_n = k / 128, nb_n = n / 128;
  const int64_t rows = min(static_cast<int64_t>(__ldg(a_offsets + groups)), max_rows);
  const int64_t a_total = rows * kb_n;
  const int64_t w_total = static_cast<int64_t>(groups) * nb_n * kb_n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < a_total + w_total; t += step) {
    if (t < a_total) {
      const int64_t r = t % rows;  // rows fastest: coalesced reads of a_scale
      const int kb = static_cast<int>(t / rows);
      const int g = group_of(a_offsets, groups, r);
      const int64_t i = r - __ldg(a_offsets + g);
      const int m = __ldg(counts + g);
      if (i >= m) continue;
      arr.sfa[static_cast<int64_t>(kb_n) * __ldg(a_offsets + g) + static_cast<int64_t>(kb) * m + i] =
          __ldg(a_scale + kb * a_stride + r);
    } else {
      const int64_t u = t - a_total;  // destination order [g][kb][nb]
      const int nb = static_cast<int>(u % nb_n);
      const int kb = static_cast<int>((u / nb_n) % kb_n);
      const int64_t g = u / (static_cast<int64_t>(nb_n) * kb_n);
      const int64_t src = (g * nb_n + nb) * kb_n + kb;
      float v;
      if (ue8m0) {
        const unsigned b = static_cast<const uint8_t*>(w_scale)[src];
        // 2^(b - 127) as the FP8 GEMMs decode it (0: 2^-127, 0xFF: NaN)
        v = __uint_as_float(b == 0 ? 0x00400000u : b == 255 ? 0x7fffffffu : (b << 23));
      } else {
        v = static_cast<const float*>(w_scale)[src];
      }
      arr.sfb[u] = v;
    }
  }
}

}  // namespace

cudaError_t run_fp8_block(const CutlassFp8BlockArgs& args, cudaStream_t stream) {
  const int sms = device_sm_count();
  if (sms <= 0 || sms > kCutlassMaxSms) return cudaErrorInvalidValue;
  Fp8Arrays arr = carve(args);
  fp8_setup_groups_kernel<<<(args.num_groups + 127) / 128, 128, 0, stream>>>(
      arr, static_cast<const Fp8Block::ElementAB*>(args.a), static_cast<const Fp8Block::ElementAB*>(args.w),
      static_cast<Fp8Block::ElementD*>(args.out), args.counts, args.a_offsets, args.out_offsets, args.num_groups,
      args.n, args.k);
  const int64_t work = args.max_rows * (args.k / 128) + int64_t(args.num_groups) * (args.n / 128) * (args.k / 128);
  const int grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((work + 255) / 256, int64_t(sms) * 8)));
  fp8_scales_kernel<<<grid, 256, 0, stream>>>(arr, args.a_scale, args.a_scale_stride, args.w_scale, args.w_scale_ue8m0,
                                              args.counts, args.a_offsets, args.num_groups, args.n, args.k,
                                              args.max_rows);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = sms;
  typename Fp8Block::Gemm::Arguments ga{
      cutlass::gemm::GemmUniversalMode::kGrouped,
      {args.num_groups, arr.shapes, nullptr},
      {arr.ptr_a, arr.stride_a, arr.ptr_b, arr.stride_b, arr.ptr_sfa, arr.layout_sfa, arr.ptr_sfb, arr.layout_sfb},
      {{}, nullptr, nullptr, arr.ptr_d, arr.stride_d},
      hw};
  return initialize_and_run<Fp8Block::Gemm>(ga, arr.cutlass_workspace, arr.cutlass_workspace_bytes, stream);
}

size_t scratch_fp8_block(int groups, int n, int k, int64_t max_rows) {
  return arrays_bytes(groups, n, k, max_rows) + cutlass_ws_bound();
}

void append_fp8_block(KernelList* out, const char* name) {
  out->push_back({"cutlass_grouped", name, reinterpret_cast<const void*>(&cutlass::device_kernel<Fp8Block::Kernel>)});
  out->push_back({"cutlass_grouped", std::string(name) + "<setup>", reinterpret_cast<const void*>(&fp8_setup_groups_kernel)});
  out->push_back({"cutlass_grouped", std::string(name) + "<scales>", reinterpret_cast<const void*>(&fp8_scales_kernel)});
}

}  // namespace fusedmoe::kernels::cutlass_grouped
