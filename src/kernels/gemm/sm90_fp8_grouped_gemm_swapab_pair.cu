// sm90_fp8_grouped_gemm_swapab_pair.cu — the FP8 e4m3 Swap-AB instances with two 64-row weight
// tiles per ring stage (Config::kWTiles == 2; session 34, an experiment: FUSEDMOE_FP8_PAIR, bit 0
// GEMM1, bit 1 GEMM2, off by default). Two CTAs per SM, the stages that fit (16 KB of weights each).
// In their own translation unit to keep each compile short.
#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"

namespace fusedmoe::kernels::sm90_fp8_grouped {

using PairSwapAB8 = Config<true, 8, 6, 2, 2>;
using PairSwapAB16 = Config<true, 16, 5, 2, 2>;
using PairSwapAB32 = Config<true, 32, 4, 2, 2>;
static_assert(smem_fits<PairSwapAB8>() && smem_fits<PairSwapAB16>() && smem_fits<PairSwapAB32>(),
              "two pair CTAs must fit on one SM");
// The tail-pair instance (Config::kTailPairs, session 59): GEMM2 reductions of 129-192 with packed
// weights (qwen235-tp8's N = 192), token tile 32. Six stages = three pair steps in flight (72 KB of
// weights, all of them useful) where the plain pair ring of tile 32 holds two (64 KB of slots, 48 KB
// useful). (Tile 16 with six stages was built and measured too: GEMM2 of qwen235-tp8-fp8c at 128
// tokens 44.7 us against 41.5 on the plain pairs, H100 session 59 call 1; not kept.)
using TailPairSwapAB32 = Config<true, 32, 6, 2, 2, true>;
static_assert(smem_fits<TailPairSwapAB32>(), "two tail-pair CTAs must fit on one SM");

// FUSEDMOE_FP8_TAIL=0 (read once; a tuning override, unset by default): the tail-pair instances off
// (the pair launches read the 2D boxes of a ragged reduction as before).
inline bool tail_env_off() {
  static const bool off = env_int("FUSEDMOE_FP8_TAIL").value_or(1) == 0;
  return off;
}

// Where a pair launch runs the tail pairs: GEMM2 on token tile 32 with the tail images (packed
// weights), a reduction of 129-192, row scales, no forced odd count of weight tiles per CTA or
// balanced schedule; with the pairs forced (Fp8GroupedGemmArgs::pair > 0) wherever that holds, by
// the rule up to 16 expected rows per expert. H100, session 59 call 1, qwen235-tp8-fp8c / -fp8t:
// GEMM2 at 256 tokens (16 rows per expert) 57.3 us against 60.2 on the plain pairs, the layers
// 153.1 / 155.9 against 155.7 / 158.5 us; at 512 tokens (32 rows) slower, GEMM2 74.2 against 70.6.
}  // namespace fusedmoe::kernels::sm90_fp8_grouped

namespace fusedmoe::kernels {
bool fp8_tail_pairs_apply(const Fp8GroupedGemmArgs& a, int tile, bool gemm2) {
  using sm90_fp8_grouped::tail_env_off;
  const int red = gemm2 ? a.n : a.k;  // (129-192: two K steps, the last holding at most 64, tail_pairs_packed)
  const int64_t rows = a.expected_rows > 0 ? a.expected_rows : a.rows_hint;
  return gemm2 && tile == 32 && a.w_packed != nullptr && red > 128 && red <= 192 &&
         !a.block_scales && a.gather_x == nullptr && a.weight_tiles_per_cta % 2 == 0 && a.balanced <= 0 &&
         !tail_env_off() && (a.pair > 0 || (rows > 0 && rows <= 16 * int64_t(a.num_groups)));
}
}  // namespace fusedmoe::kernels

namespace fusedmoe::kernels::sm90_fp8_grouped {

cudaError_t launch_swapab_pair(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  if (fp8_tail_pairs_apply(a, tile, gemm2)) {
    note_tail_pairs(true);
    return launch_instance<TailPairSwapAB32>(a, gemm2, stream);
  }
  note_tail_pairs(false);
  switch (tile) {
    case 8: return launch_instance<PairSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<PairSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<PairSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

// (the tail-pair config's kernels: plain GEMM2, H read or quantised by it; launch_instance runs no other)
template <class Cfg>
void append_tail_instances(KernelList* out) {
  const std::string name = config_name<Cfg>();
  out->push_back({"grouped_gemm_fp8", name, reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>)});
  out->push_back({"grouped_gemm_fp8", name + "_hs",
                  reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, true>)});
}

void append_swapab_pair_instances(KernelList* out) {
  append_config_instances<PairSwapAB8>(out);
  append_config_instances<PairSwapAB16>(out);
  append_config_instances<PairSwapAB32>(out);
  append_tail_instances<TailPairSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
