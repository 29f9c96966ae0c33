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
// The tail-pair instances (Config::kTailPairs, session 59): GEMM2 reductions of 129-192 with packed
// weights (qwen235-tp8's N = 192). Six stages = three pair steps in flight (72 KB of weights, all of
// them useful) where the plain pair ring of tile 32 holds two (64 KB of slots, 48 KB useful).
using TailPairSwapAB16 = Config<true, 16, 6, 2, 2, true>;
using TailPairSwapAB32 = Config<true, 32, 6, 2, 2, true>;
static_assert(smem_fits<TailPairSwapAB16>() && smem_fits<TailPairSwapAB32>(), "two tail-pair CTAs must fit on one SM");

// FUSEDMOE_FP8_TAIL=0 (read once; a tuning override, unset by default): the tail-pair instances off
// (the pair launches read the 2D boxes of a ragged reduction as before).
inline bool tail_env_off() {
  static const bool off = env_int("FUSEDMOE_FP8_TAIL").value_or(1) == 0;
  return off;
}

bool fp8_tail_pairs_apply(const Fp8GroupedGemmArgs& a, bool gemm2) {
  const int red = gemm2 ? a.n : a.k;
  return gemm2 && a.w_packed != nullptr && red > 128 && red <= 192 && tail_pairs_packed(red) && !a.block_scales &&
         a.gather_x == nullptr && a.weight_tiles_per_cta % 2 == 0 && a.balanced <= 0 && !tail_env_off();
}

// (the tail-pair configs' kernels: plain GEMM2, H read or quantised by it; launch_instance runs no other)
template <class Cfg>
void append_tail_instances(KernelList* out) {
  const std::string name = config_name<Cfg>();
  out->push_back({"grouped_gemm_fp8", name, reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false>)});
  out->push_back({"grouped_gemm_fp8", name + "_hs",
                  reinterpret_cast<const void*>(&sm90_fp8_grouped_gemm_kernel<Cfg, false, false, false, true>)});
}

cudaError_t launch_swapab_pair(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream) {
  if (fp8_tail_pairs_apply(a, gemm2) && (tile == 16 || tile == 32)) {
    note_tail_pairs(true);
    return tile == 16 ? launch_instance<TailPairSwapAB16>(a, gemm2, stream)
                      : launch_instance<TailPairSwapAB32>(a, gemm2, stream);
  }
  note_tail_pairs(false);
  switch (tile) {
    case 8: return launch_instance<PairSwapAB8>(a, gemm2, stream);
    case 16: return launch_instance<PairSwapAB16>(a, gemm2, stream);
    case 32: return launch_instance<PairSwapAB32>(a, gemm2, stream);
    default: return cudaErrorInvalidValue;
  }
}

void append_swapab_pair_instances(KernelList* out) {
  append_config_instances<PairSwapAB8>(out);
  append_config_instances<PairSwapAB16>(out);
  append_config_instances<PairSwapAB32>(out);
  append_tail_instances<TailPairSwapAB16>(out);
  append_tail_instances<TailPairSwapAB32>(out);
}

}  // namespace fusedmoe::kernels::sm90_fp8_grouped
