// sm90_fp8_grouped_gemm_launch.cu — host entry points of the FP8 e4m3 grouped expert GEMMs:
// argument checks (host only, before any CUDA call), the normal-family instances, their names.
// Both families (the Swap-AB one in sm90_fp8_grouped_gemm_swapab*.cu) are validated on the H200
// and used by forward().
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"
#include "kernels/gemm/grouped_schedule_rules.h"

#include "kernels/gemm/sm90_fp8_grouped_gemm.cuh"

namespace fusedmoe::kernels {

namespace sm90_fp8_grouped {

constexpr int kNormalStages = 5;  // 128x128x128: 32 KB per stage (the BF16 kernel's bytes in flight)
using Normal = Config</*swap=*/false, /*tokens=*/128, kNormalStages>;
static_assert(smem_bytes<Normal>() <= 227 * 1024, "one CTA per SM must fit");

// sm90_fp8_grouped_gemm_swapab.cu
cudaError_t launch_swapab(const Fp8GroupedGemmArgs& a, int tile, bool gemm2, cudaStream_t stream);
void append_swapab_instances(KernelList* out);
int64_t packed_weight_bytes_swapab(const GroupedGemmArgs& a, bool gemm2);
cudaError_t pack_weights_swapab(const GroupedGemmArgs& a, bool gemm2, void* out, cudaStream_t stream);
void append_fp8_weight_pack_instance(KernelList* out);

}  // namespace sm90_fp8_grouped

namespace sm90_fp8_grouped {
thread_local int g_last_tail_pairs = -1;
void note_tail_pairs(bool tails) { g_last_tail_pairs = tails ? 1 : 0; }
}  // namespace sm90_fp8_grouped

namespace {

// Keep in step with kNormalStages and config_name() (checked by tests/cpu/test_kernel_registry.cpp).
constexpr const char* kNames[] = {
    "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row_gated",
    "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row",
    // the Swap-AB tiles with the balanced / dynamic schedules (the ones above run the raster only)
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced",
    // the dense Swap-AB instances (Fp8GroupedGemmArgs::dense: 4 / 4 / 3 CTAs per SM)
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s5_c4_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s5_c4_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s5_c4_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s5_c4_row_balanced",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s4_c4_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s4_c4_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s4_c4_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s4_c4_row_balanced",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s5_c3_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s5_c3_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s5_c3_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s5_c3_row_balanced",
    // the 2-CTA Swap-AB instances with the deferred promotion (FUSEDMOE_FP8_DEFER=1; off by default)
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_defer_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_defer",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced_defer_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced_defer",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_defer_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_defer",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced_defer_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced_defer",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_defer_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_defer",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_defer_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_defer",
    // two weight tiles per stage (FUSEDMOE_FP8_PAIR; off by default)
    "sm90_fp8e4m3_grouped_gemm_swapab_128x8x128_s6_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x8x128_s6_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x8x128_s6_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x8x128_s6_row_balanced",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x16x128_s5_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x16x128_s5_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x16x128_s5_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x16x128_s5_row_balanced",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row_balanced_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row_balanced",
    // GEMM2 quantising H itself (Fp8GroupedGemmArgs::hs_src, the kernel's kHs), every Swap-AB config
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s5_c4_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s5_c4_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s4_c4_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s4_c4_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s5_c3_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s5_c3_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x8x128_s6_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x8x128_s6_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x16x128_s5_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x16x128_s5_row_balanced_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row_hs",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s4_row_balanced_hs",
    // GEMM1 gathering its rows from the token-order x (Fp8GroupedGemmArgs::gather_x, the kernel's
    // kGather), the 2-CTA Swap-AB configs
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_gather_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_gather",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced_gather_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_balanced_gather",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_gather_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_gather",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced_gather_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x16x128_s10_row_balanced_gather",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_gather_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_gather",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_gather_gated",
    "sm90_fp8e4m3_grouped_gemm_swapab_64x32x128_s8_row_balanced_gather",
    // the tail-pair instances (Config::kTailPairs: GEMM2 reductions of 129-192 with packed weights, token tile 32)
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s6_tails_row",
    "sm90_fp8e4m3_grouped_gemm_swapab_128x32x128_s6_tails_row_hs",
};
static_assert(sm90_fp8_grouped::kNormalStages == 5, "instance names spell the stage count");

bool aligned(const void* p, uintptr_t n) { return (reinterpret_cast<uintptr_t>(p) & (n - 1)) == 0; }

// Family and token tile of a launch: kNormal (tile 0 / 128), kSwapAB (8, 16, 32; 0 = 16), kAuto
// (from the tile: <= 64 Swap-AB). False when unsupported.
bool resolve(TileFamily family, int tile, bool* swap, int* tile_out) {
  if (family == TileFamily::kAuto) family = (tile > 0 && tile <= 64) ? TileFamily::kSwapAB : TileFamily::kNormal;
  if (family == TileFamily::kNormal) {
    *swap = false;
    *tile_out = 128;
    return tile == 0 || tile == 128;
  }
  if (family != TileFamily::kSwapAB) return false;
  if (tile == 0) tile = 16;
  *swap = true;
  *tile_out = tile;
  return tile == 8 || tile == 16 || tile == 32;
}

cudaError_t launch(const Fp8GroupedGemmArgs& a, bool gemm2, cudaStream_t stream) {
  const cudaError_t err = check_fp8_grouped_gemm_args(a, gemm2);
  if (err != cudaSuccess || a.max_rows == 0) return err;
  bool swap = false;
  int tile = 0;
  (void)resolve(a.family, a.tokens_tile, &swap, &tile);  // checked above
  if (swap) return sm90_fp8_grouped::launch_swapab(a, tile, gemm2, stream);
  return sm90_fp8_grouped::launch_instance<sm90_fp8_grouped::Normal>(a, gemm2, stream);
}

}  // namespace

cudaError_t check_fp8_grouped_gemm_args(const Fp8GroupedGemmArgs& a, bool gemm2) {
  // family / tile: normal (128-row token tile) or Swap-AB (8, 16, 32)
  bool swap = false;
  int tile = 0;
  if (!resolve(a.family, a.tokens_tile, &swap, &tile)) return cudaErrorInvalidValue;
  // shapes: 1-byte rows need K and N multiples of 16 (TMA global strides are multiples of 16 B)
  if (a.num_groups < 1 || a.num_groups > 65536) return cudaErrorInvalidValue;
  if (a.n <= 0 || a.k <= 0 || a.n % 16 != 0 || a.k % 16 != 0) return cudaErrorInvalidValue;
  if (a.max_rows < 0 || a.max_rows > int64_t(INT_MAX) - 256) return cudaErrorInvalidValue;
  if (a.weight_tiles_per_cta < 0) return cudaErrorInvalidValue;
  if (a.block_scales && (a.n % 128 != 0 || a.k % 128 != 0)) return cudaErrorInvalidValue;
  // activation block scales: row order (stride >= max_rows), or token order through row_token
  // (stride >= the reduction's 128-blocks; not for GEMM2, whose rows are H's)
  const int64_t red_blocks = ((gemm2 ? a.n : a.k) + 127) / 128;
  if (a.a_scale_row_token != nullptr && (!a.block_scales || gemm2)) return cudaErrorInvalidValue;
  // gathered A rows (GEMM1 on Swap-AB tiles, x and its scales in token order): not with token-order
  // scales of permuted rows, early weights (the plan is read before the wait) or the queue
  const bool gather = a.gather_x != nullptr;
  if (gather && (gemm2 || !swap || a.a_scale_row_token != nullptr || a.early_weights || !a.row_token || !a.offsets ||
                 !aligned(a.gather_x, 16) || (a.gather_x_stride != 0 && (a.gather_x_stride < a.k || a.gather_x_stride % 16 != 0))))
    return cudaErrorInvalidValue;
  // (gathered: the scales' stride covers the tokens, which the caller knows; row order: the rows)
  if (a.block_scales && a.a_scale_stride < (a.a_scale_row_token != nullptr ? red_blocks : gather ? 1 : a.max_rows))
    return cudaErrorInvalidValue;
  // H quantised in GEMM1's epilogue: Swap-AB GEMM1, static / per-token / 1x128 scales
  if (a.hq_act != ActQuant::kNone) {
    if (gemm2 || !swap || !fp8_gemm1_quantises_h(a.hq_act, tile, a.n)) return cudaErrorInvalidValue;
    if (a.hq_act == ActQuant::kPerTensorStatic ? a.hq_static == nullptr
                                                : (!a.hq_scales || !a.hq_partials || !a.hq_counters))
      return cudaErrorInvalidValue;
    if (a.hq_act == ActQuant::kGroup128 && a.hq_scale_stride < a.max_rows) return cudaErrorInvalidValue;
    if (!a.hq_out || !aligned(a.hq_out, 16)) return cudaErrorInvalidValue;
  }
  // H quantised by GEMM2: Swap-AB GEMM2, per token (row scales) or 1x128 (block scales)
  if (a.hs_src != nullptr) {
    if (!gemm2 || !swap || !fp8_gemm2_quantises_h(a.hs_act, a.n) || !aligned(a.hs_src, 16)) return cudaErrorInvalidValue;
    if (a.hs_act == ActQuant::kPerToken ? (a.block_scales || !a.a_scale_per_token) : !a.block_scales)
      return cudaErrorInvalidValue;
  }
  if (a.max_rows == 0) return cudaSuccess;
  if (a.a_scale_row_token != nullptr && !a.offsets) return cudaErrorInvalidValue;
  // token-order scales: token * stride in 32 bits (tokens <= rows)
  if (a.a_scale_row_token != nullptr && a.max_rows * a.a_scale_stride > int64_t(INT_MAX)) return cudaErrorInvalidValue;
  // pointers
  if ((!a.a && !gather) || !a.w || !a.out || !a.counts || !a.padded_offsets) return cudaErrorInvalidValue;
  if (gemm2 && !a.offsets) return cudaErrorInvalidValue;
  if (!a.a_scale || !a.w_scale) return cudaErrorInvalidValue;
  if ((!gather && !aligned(a.a, 16)) || !aligned(a.w, 16) || !aligned(a.out, 16)) return cudaErrorInvalidValue;
  if (!aligned(a.a_scale, 4) || (!(a.block_scales && a.w_scale_ue8m0) && !aligned(a.w_scale, 4)))
    return cudaErrorInvalidValue;
  if (a.bias && !aligned(a.bias, 4)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

bool fp8_gemm1_quantises_h(ActQuant act, int tokens_tile, int n) {
  if (tokens_tile <= 0 || tokens_tile > 64 || n % 16 != 0) return false;
  return act == ActQuant::kPerTensorStatic || act == ActQuant::kPerToken || (act == ActQuant::kGroup128 && n % 128 == 0);
}

bool fp8_gemm2_quantises_h(ActQuant act, int n) {
  return (act == ActQuant::kPerToken || act == ActQuant::kGroup128) &&
         grouped_schedule::fp8_gemm2_hs_fits(n, act == ActQuant::kGroup128);
}

int64_t fp8_hq_partials_floats(int64_t max_rows, int n, bool gated) {
  const int cols = gated ? 32 : 64;  // H columns per Swap-AB weight tile
  return max_rows * ((n + cols - 1) / cols);
}

int64_t fp8_hq_counter_words(int64_t max_rows, int n, ActQuant act) {
  const int64_t groups = act == ActQuant::kGroup128 ? (n + 127) / 128 : 1;
  return (max_rows + 7) / 8 * groups;
}

cudaError_t launch_fp8_grouped_gemm1(const Fp8GroupedGemmArgs& args, cudaStream_t stream) {
  return launch(args, /*gemm2=*/false, stream);
}

cudaError_t launch_fp8_grouped_gemm2(const Fp8GroupedGemmArgs& args, cudaStream_t stream) {
  return launch(args, /*gemm2=*/true, stream);
}

int last_fp8_pair_tails() { return sm90_fp8_grouped::g_last_tail_pairs; }

const char* const* fp8_grouped_gemm_instance_names(int* count) {
  if (count) *count = int(sizeof(kNames) / sizeof(kNames[0]));
  return kNames;
}

void append_grouped_gemm_fp8_instances(KernelList* out) {
  sm90_fp8_grouped::append_config_instances<sm90_fp8_grouped::Normal>(out);
  sm90_fp8_grouped::append_swapab_instances(out);
}

int64_t packed_fp8_grouped_gemm_weight_bytes(const GroupedGemmArgs& args, bool gemm2) {
  return sm90_fp8_grouped::packed_weight_bytes_swapab(args, gemm2);
}
cudaError_t pack_fp8_grouped_gemm_weights(const GroupedGemmArgs& args, bool gemm2, void* packed, cudaStream_t stream) {
  return sm90_fp8_grouped::pack_weights_swapab(args, gemm2, packed, stream);
}

namespace sm90_grouped {
void append_bf16_weight_pack_instance(KernelList* out);  // sm90_bf16_grouped_gemm_swapab_small.cu
}

void append_weight_pack_instances(KernelList* out) {
  sm90_grouped::append_bf16_weight_pack_instance(out);
  sm90_fp8_grouped::append_fp8_weight_pack_instance(out);
}

}  // namespace fusedmoe::kernels
