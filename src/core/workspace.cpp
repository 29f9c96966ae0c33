#include "core/workspace.h"

#include <algorithm>

#include "fusedmoe/types.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/dispatch/plan_launch.h"
#include "kernels/front/front_launch.h"
#include "kernels/gemm/cutlass_grouped_gemm.h"
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"
#include "kernels/quant/permute_quant_launch.h"
#endif

namespace fusedmoe::detail {

namespace {
struct Builder {
  size_t cursor = 0;
  Region take(size_t bytes) {
    Region r{cursor, bytes};
    cursor += (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
    return r;
  }
};
}  // namespace

WorkspaceLayout WorkspaceLayout::plan(const MoeProblem& p) {
  const size_t t = static_cast<size_t>(p.max_tokens);
  const size_t k = static_cast<size_t>(p.top_k());
  const size_t slots = static_cast<size_t>(p.slots_per_token());
  const size_t groups = static_cast<size_t>(p.weight_experts());
  const size_t rows = t * slots;
  // Only non-empty experts are padded to the tile: at most min(groups, rows) of them.
  const size_t rows_pad = rows + std::min(groups, rows) * (kMaxTileRows - 1);
  const size_t kdim = static_cast<size_t>(p.hidden);
  const size_t ndim = static_cast<size_t>(p.intermediate);
  const bool fp8 = p.quant.act != ActQuant::kNone;
  const size_t act_bytes = fp8 ? 1 : dtype_bytes(p.act_dtype);
  const size_t k_groups = p.quant.act == ActQuant::kGroup128 ? (kdim + 127) / 128 : 1;
  const size_t n_groups = p.quant.act == ActQuant::kGroup128 ? (ndim + 127) / 128 : 1;

  Builder b;
  WorkspaceLayout w;
  w.topk_ids = b.take(t * k * 4);
  w.topk_weights = b.take(t * k * 4);
  w.counts = b.take(groups * 4);
  w.offsets = b.take((groups + 1) * 4);
  w.padded_offsets = b.take((groups + 1) * 4);
  w.row_token = b.take(rows_pad * 4);
  w.row_slot = b.take(rows_pad * 4);
  w.slot_row = b.take(t * slots * 4);
  w.act_in = b.take(rows_pad * kdim * act_bytes);
  w.act_in_scales = b.take(fp8 ? k_groups * ((rows_pad + 3) / 4 * 4) * 4 : 0);
  w.intermediate = b.take(rows_pad * ndim * dtype_bytes(p.act_dtype));
  w.inter_q = b.take(fp8 ? rows_pad * ndim : 0);
  w.inter_scales = b.take(fp8 ? n_groups * ((rows_pad + 3) / 4 * 4) * 4 : 0);
  // BF16 weights or FP8 128x128 blocks (the CUTLASS path can run): GEMM1's pre-activation rows
  // [R_pad, R1] live in the GEMM2 output's region, which nothing uses until GEMM2.
  const bool bf16_weights = p.quant.weight.format == WeightFormat::kBF16;
  const bool fp8_block = p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                         p.quant.weight.granularity == ScaleGranularity::kBlock && p.quant.act == ActQuant::kGroup128;
  // FP8 with per-tensor / per-channel weight scales: CUTLASS's FP8 grouped GEMM, scales in the epilogue
  const bool fp8_row = p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                       (p.quant.weight.granularity == ScaleGranularity::kPerTensor ||
                        p.quant.weight.granularity == ScaleGranularity::kPerChannel);
  const bool cutlass_path = bf16_weights || fp8_block || fp8_row;
  const size_t r1 = static_cast<size_t>(p.activation.gemm1_rows(p.intermediate));
  // (the CUTLASS path pads groups to kCutlassTileRows, not to the tallest tile: holds_cutlass_rows)
  const size_t rows_pad_cutlass = rows + std::min(groups, rows) * (kCutlassTileRows - 1);
  w.expert_out =
      b.take(std::max(rows * kdim, cutlass_path ? rows_pad_cutlass * r1 : size_t(0)) * dtype_bytes(p.act_dtype));
  w.error_flag = b.take(16);
  w.gemm_queue = b.take(16);
#if defined(FUSEDMOE_WITH_CUDA)
  // The plan's scratch also holds the fused front's per-block masks (never both in one call).
  w.plan_scratch = b.take(std::max(kernels::plan_scratch_bytes(p.max_tokens, p.top_k(), static_cast<int>(groups)),
                                   kernels::front_scratch_bytes(p.max_tokens, static_cast<int>(groups))));
  w.quant_scratch = b.take(kernels::permute_quant_scratch_bytes(p.max_tokens, p.hidden));
  // H quantised in GEMM1's epilogue (FP8 weights, per-token or 1x128 activation scales)
  const bool hq = p.quant.weight.format == WeightFormat::kFP8E4M3 &&
                  (p.quant.act == ActQuant::kPerToken || p.quant.act == ActQuant::kGroup128);
  const int64_t hq_rows = static_cast<int64_t>(rows_pad);
  w.hq_partials = b.take(hq ? size_t(kernels::fp8_hq_partials_floats(hq_rows, p.intermediate, p.activation.gated())) * 4 : 0);
  w.hq_counters = b.take(hq ? size_t(kernels::fp8_hq_counter_words(hq_rows, p.intermediate, p.quant.act)) * 4 : 0);
  // (one half per GEMM; FP8 blocks: also the re-laid scales of the largest of the GEMMs)
  const int gi = static_cast<int>(groups);
  const size_t fp8_half =
      fp8_row ? kernels::cutlass_fp8_row_scratch_bytes(gi)
      : fp8_block && p.hidden % 128 == 0 && p.intermediate % 128 == 0
          ? std::max({kernels::cutlass_fp8_block_scratch_bytes(gi, static_cast<int>(r1), p.hidden,
                                                               static_cast<int64_t>(rows_pad_cutlass)),
                      kernels::cutlass_fp8_block_scratch_bytes(gi, p.hidden, p.intermediate,
                                                               static_cast<int64_t>(rows_pad_cutlass)),
                      // GEMM1 with the activation in its epilogue (ForwardOptions::fused_activation)
                      kernels::cutlass_fp8_gated_scratch_bytes(gi, static_cast<int>(p.intermediate), p.hidden,
                                                               static_cast<int64_t>(rows_pad_cutlass), p.activation)})
          : 0;
  w.cutlass_scratch = b.take(bf16_weights ? 2 * kernels::cutlass_grouped_scratch_bytes(gi) : 2 * fp8_half);
#endif
  w.total = b.cursor;
  return w;
}

double expected_local_rows(const MoeProblem& p) {
  const double routed = static_cast<double>(p.num_tokens) * p.local_slots_per_token();
  return routed + static_cast<double>(p.num_tokens) * p.num_shared_experts;
}

int64_t expected_rows_per_group(const MoeProblem& p) {
  return static_cast<int64_t>(expected_local_rows(p) / std::max(p.weight_experts(), 1));
}

bool WorkspaceLayout::holds_cutlass_rows(const MoeProblem& p, int tile_rows) const {
  const size_t groups = static_cast<size_t>(p.weight_experts());
  const size_t rows = static_cast<size_t>(p.max_tokens) * static_cast<size_t>(p.slots_per_token());
  const size_t r1 = static_cast<size_t>(p.activation.gemm1_rows(p.intermediate));
  const size_t padded = rows + std::min(groups, rows) * static_cast<size_t>(tile_rows - 1);
  return padded * r1 * dtype_bytes(p.act_dtype) <= expert_out.bytes;
}

}  // namespace fusedmoe::detail
