// The CUTLASS FP8 blockwise-scaled grouped GEMM (cutlass_fp8_block_gemm.cuh), cooperative 128x128x128
// tiles on 1x1 clusters, and the scale re-layout kernel every configuration launches.
#include "kernels/gemm/cutlass_fp8_block_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

namespace {

__global__ void fp8_scales_kernel(float* sfa, float* sfb, const float* a_scale, int64_t a_stride, const void* w_scale,
                                  bool ue8m0, const int32_t* counts, const int32_t* a_offsets, int groups, int n,
                                  int k, int64_t max_rows, int gran_n, int blocks8_half) {
  const int kb_n = k / 128, nb_n = n / gran_n, src_nb_n = n / 128;
  const int64_t rows = min(static_cast<int64_t>(__ldg(a_offsets + groups)), max_rows);
  const int64_t a_total = rows * kb_n;
  const int64_t w_total = static_cast<int64_t>(groups) * nb_n * kb_n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < a_total + w_total; t += step) {
    if (t < a_total) {
      const int64_t r = t % rows;  // rows fastest: coalesced reads of a_scale
      const int kb = static_cast<int>(t / rows);
      const int g = fp8_group_of(a_offsets, groups, r);
      const int64_t i = r - __ldg(a_offsets + g);
      const int m = __ldg(counts + g);
      if (i >= m) continue;
      sfa[static_cast<int64_t>(kb_n) * __ldg(a_offsets + g) + static_cast<int64_t>(kb) * m + i] =
          __ldg(a_scale + kb * a_stride + r);
    } else {
      const int64_t u = t - a_total;  // destination order [g][kb][nb], nb: blocks of gran_n weight rows
      const int nb = static_cast<int>(u % nb_n);
      const int kb = static_cast<int>((u / nb_n) % kb_n);
      const int64_t g = u / (static_cast<int64_t>(nb_n) * kb_n);
      // the first weight row of block nb as the caller's scales count it: with blocks8_half = N the
      // GEMM's rows alternate in blocks of 8 gate and 8 up rows (row 16b + q: gate row 8b + q for
      // q < 8, up row N + 8b + q - 8), and gran_n divides 8
      const int r = nb * gran_n, b = r >> 4, q = r & 15;
      const int row = blocks8_half > 0 ? (q < 8 ? 8 * b + q : blocks8_half + 8 * b + q - 8) : r;
      const int64_t src = (g * src_nb_n + row / 128) * kb_n + kb;
      float v;
      if (ue8m0) {
        const unsigned b = static_cast<const uint8_t*>(w_scale)[src];
        // 2^(b - 127) as the FP8 GEMMs decode it (0: 2^-127, 0xFF: NaN)
        v = __uint_as_float(b == 0 ? 0x00400000u : b == 255 ? 0x7fffffffu : (b << 23));
      } else {
        v = static_cast<const float*>(w_scale)[src];
      }
      sfb[u] = v;
    }
  }
}

}  // namespace

void launch_fp8_scales(float* sfa, float* sfb, const CutlassFp8BlockArgs& args, int sms, cudaStream_t stream,
                       int gran_n, int blocks8_half) {
  const int64_t work = args.max_rows * (args.k / 128) + int64_t(args.num_groups) * (args.n / gran_n) * (args.k / 128);
  const int grid = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((work + 255) / 256, int64_t(sms) * 8)));
  fp8_scales_kernel<<<grid, 256, 0, stream>>>(sfa, sfb, args.a_scale, args.a_scale_stride, args.w_scale,
                                              args.w_scale_ue8m0, args.counts, args.a_offsets, args.num_groups, args.n,
                                              args.k, args.max_rows, gran_n, blocks8_half);
}

const void* fp8_scales_kernel_ptr() { return reinterpret_cast<const void*>(&fp8_scales_kernel); }

cudaError_t run_fp8_block(const CutlassFp8BlockArgs& a, cudaStream_t stream) { return fp8_block_run<Fp8BlockCoop128>(a, stream); }
size_t scratch_fp8_block(int groups, int n, int k, int64_t max_rows) {
  return fp8_block_scratch<Fp8BlockCoop128>(groups, n, k, max_rows);
}
void append_fp8_block(KernelList* out, const char* name) { fp8_block_append<Fp8BlockCoop128>(out, name); }

std::string fp8_block_scale_check() { return blockwise_scale_load_check<Fp8BlockCoop128>(); }

}  // namespace fusedmoe::kernels::cutlass_grouped
