// Layout of the caller-provided workspace: named regions, each 256-byte aligned, sized for
// max_tokens. The same function sizes the workspace (workspace_size) and slices it (forward),
// so the two cannot drift.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fusedmoe/problem.h"

namespace fusedmoe::detail {

inline constexpr size_t kWorkspaceAlign = 256;
// Grouped rows are padded per expert up to the tallest GEMM tile.
inline constexpr int kMaxTileRows = 128;
// The CUTLASS path pads each expert's rows to this (CUTLASS takes each group's row count).
inline constexpr int kCutlassTileRows = 8;

// Expected grouped rows on this rank: T * (local slots + shared), the local slots per token
// MoeProblem::local_slots_per_token() (uniform routing: k * local / E, or the expected_local_slots hint).
double expected_local_rows(const MoeProblem& p);
// Expected rows per weight group (expected_local_rows / groups): a tile-choice hint.
int64_t expected_rows_per_group(const MoeProblem& p);

struct Region {
  size_t offset = 0;
  size_t bytes = 0;
};

struct WorkspaceLayout {
  Region topk_ids;       // i32 [T, k]
  Region topk_weights;   // f32 [T, k]
  Region counts;         // i32 [G]       rows per local expert (G = local + shared)
  Region offsets;        // i32 [G + 1]   exclusive prefix sums
  Region padded_offsets; // i32 [G + 1]   prefix sums of counts rounded up to the tile
  Region row_token;      // i32 [R_pad]   token of each grouped row (-1 in padding)
  Region row_slot;       // i32 [R_pad]   slot of each grouped row
  Region slot_row;       // i32 [T, k + shared]
  Region act_in;         // [R_pad, K]    permuted / quantised GEMM1 input (contiguous layout)
  Region act_in_scales;  // f32 [K/128 or 1, R_pad] (token index fastest)
  Region intermediate;   // [R_pad, N]    GEMM1 + activation output (act_dtype: the GEMMs write bf16)
  Region inter_q;        // e4m3 [R_pad, N] the intermediate quantised for an FP8 GEMM2
  Region inter_scales;   // f32 [N/128 or 1, R_pad]
  Region expert_out;     // act_dtype [R, K] GEMM2 output before the combine; BF16 weights: also
                         // GEMM1's pre-activation rows [R_pad, R1] on the CUTLASS path (sized for both)
  Region error_flag;     // i32 [4]       device-side input errors (ids out of range, token count)
  Region gemm_queue;     // i32 [4]       the dynamic balanced GEMM2's work counter (GEMM1 zeroes it)
  Region hq_partials;    // f32 [R_pad, GEMM1 weight tiles] H's per-tile row absmax (H quantised in GEMM1)
  Region hq_counters;    // i32           its (token tile, group) arrival counters (zeroed by forward())
  Region plan_scratch;   // kernels::plan_scratch_bytes
  Region quant_scratch;  // kernels::permute_quant_scratch_bytes
  Region cutlass_scratch;  // the CUTLASS path, one half per GEMM: BF16 weights kernels::cutlass_grouped_scratch_bytes,
                           // FP8 blocks kernels::cutlass_fp8_block_scratch_bytes (the larger GEMM's)
  size_t total = 0;

  static WorkspaceLayout plan(const MoeProblem& p);
  // Whether expert_out holds GEMM1's pre-activation rows on the CUTLASS path with every group padded
  // to tile_rows (plan() sizes it for kCutlassTileRows; ForwardOptions::pingpong_gemm2 there needs
  // 128: where K is short against 2N and the experts many, it does not fit, and the CUTLASS backend
  // keeps its own GEMM2).
  bool holds_cutlass_rows(const MoeProblem& p, int tile_rows) const;
};

}  // namespace fusedmoe::detail
