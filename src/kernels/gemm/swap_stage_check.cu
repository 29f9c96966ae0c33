// swap_stage_check.cu — host check of the Swap-AB epilogue's stmatrix placement
// (sm90_grouped::SwapStage::put_values / put_matrices, session 44) against the per-value puts, for
// every consumer thread of every Swap-AB accumulator shape the two grouped-GEMM kernels build.
//   1. CuTe's partition of the WGMMA accumulators (the kernels' atoms: BF16 64xTx16, e4m3 64xTx32)
//      gives each (thread, value index) its (weight row, token).
//   2. The per-value puts (the kernels' other branch) put value i at buffer (token, column): plain
//      column = weight row; gated (gate rows 16w + 0..7, up rows 16w + 8..15) column = 8w + row % 8,
//      the output of gate value i and up value i + 2.
//   3. stmatrix .trans, as the PTX ISA defines it: register r of lane l holds elements (l / 4,
//      2 (l % 4) + h) of matrix r; lane 8q + k (x4: q < 4, x2: q < 2, x1: q = 0) gives the address
//      of the matrix's stored row k, which receives the matrix's column k, element e at position e.
//      The addresses are SwapStage's own (matrix_row / matrix_col, evaluated for the giving lane as
//      put_matrices does), the registers put_values' packing (packed_value).
// Every output must land where the per-value put would write it, and every (token, column) of the
// staging tile be written exactly once. Run by a CPU test (no GPU needed).
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"

#include <string>

#include "kernels/gemm/sm90_bf16_grouped_gemm.cuh"  // SwapStage, CuTe (after the .h: cudaTypedefs.h wants cuda.h first)

namespace fusedmoe::kernels {
namespace {

template <class Atom, int kTok, bool kGated>
std::string check_shape(const char* atom_name) {
  using namespace cute;
  using Stage = sm90_grouped::SwapStage<kTok, kGated ? 32 : 64>;
  constexpr int kCols = kGated ? 32 : 64;
  constexpr int kMats = kTok / 8 * Stage::kPerJ;
  constexpr int kVals = kTok / 2;
  auto mma = make_tiled_mma(Atom{});
  auto c_mn = make_identity_tensor(make_shape(Int<64>{}, Int<kTok>{}));  // (weight row, token)
  int seen[kTok][kCols] = {};
  const std::string shape = std::string(atom_name) + ", tile " + std::to_string(kTok) + (kGated ? ", gated" : ", plain");
  auto fail = [&](const std::string& what, int thread, int m, int h) {
    return shape + ": thread " + std::to_string(thread) + ", register " + std::to_string(m) + ", half " +
           std::to_string(h) + ": " + what;
  };
  for (int thread = 0; thread < 128; ++thread) {
    auto tc = mma.get_thread_slice(thread).partition_C(c_mn);
    if (int(size(tc)) != kVals) return fail("values per thread differ from kTok / 2", thread, -1, -1);
    const int warp = thread / 32, lane = thread % 32;
    for (int m = 0; m < kMats; ++m) {
      // The lanes that give matrix m's row addresses in put_matrices (x1: lanes 0-7 for matrix 0;
      // x2: lane L for matrix (L >> 3) & 1; x4: lane L for matrix g + (L >> 3) of its group g).
      int giver[8];
      for (int k = 0; k < 8; ++k) giver[k] = -1;
      for (int L = 0; L < 32; ++L) {
        int mm;
        if (kMats == 1) {
          if (L >= 8) continue;
          mm = 0;
        } else if (kMats == 2) {
          if (L >= 16) continue;
          mm = (L >> 3) & 1;
        } else {
          mm = (m / 4) * 4 + (L >> 3);
        }
        if (mm == m) giver[L & 7] = L;
      }
      for (int h = 0; h < 2; ++h) {
        const int k = 2 * (lane % 4) + h;  // fragment column = stored row
        const int e = lane / 4;            // fragment row = element within the stored row
        if (giver[k] < 0 || (giver[k] & 7) != k) return fail("no lane gives the stored row's address", thread, m, h);
        const int row = Stage::matrix_row(m, giver[k] & 7), col = Stage::matrix_col(m, warp) + e;
        if (row < 0 || row >= kTok || col < 0 || col >= kCols) return fail("stmatrix writes outside the tile", thread, m, h);
        // Where the per-value puts write this output.
        const int i = Stage::packed_value(m, h);
        if (i < 0 || i >= kVals) return fail("packed value index out of range", thread, m, h);
        const int r = get<0>(tc(i)), t = get<1>(tc(i));
        int c = r;
        if constexpr (kGated) {
          if (r % 16 >= 8) return fail("a gated output's value is not a gate row", thread, m, h);
          if (i % 4 >= 2 || get<0>(tc(i + 2)) != r + 8 || get<1>(tc(i + 2)) != t)
            return fail("value i + 2 is not the up row of gate value i", thread, m, h);
          c = (r >> 4) * 8 + (r & 7);
        }
        if (row != t || col != c)
          return fail("stmatrix puts value " + std::to_string(i) + " at (token " + std::to_string(row) + ", column " +
                          std::to_string(col) + "), the per-value put at (" + std::to_string(t) + ", " + std::to_string(c) + ")",
                      thread, m, h);
        ++seen[row][col];
      }
    }
  }
  for (int t = 0; t < kTok; ++t)
    for (int c = 0; c < kCols; ++c)
      if (seen[t][c] != 1)
        return shape + ": (token " + std::to_string(t) + ", column " + std::to_string(c) + ") written " +
               std::to_string(seen[t][c]) + " times";
  return "";
}

template <class Atom, int kTok>
std::string check_both(const char* atom_name) {
  std::string e = check_shape<Atom, kTok, false>(atom_name);
  return e.empty() ? check_shape<Atom, kTok, true>(atom_name) : e;
}

}  // namespace

std::string swap_stsm_layout_check() {
  using namespace cute;
  using K = GMMA::Major;
  for (const std::string& e : {
           check_both<SM90_64x8x16_F32BF16BF16_SS<K::K, K::K>, 8>("bf16 64x8x16"),
           check_both<SM90_64x16x16_F32BF16BF16_SS<K::K, K::K>, 16>("bf16 64x16x16"),
           check_both<SM90_64x32x16_F32BF16BF16_SS<K::K, K::K>, 32>("bf16 64x32x16"),
           check_both<SM90_64x64x16_F32BF16BF16_SS<K::K, K::K>, 64>("bf16 64x64x16"),
           check_both<SM90_64x8x32_F32E4M3E4M3_SS_TN<>, 8>("e4m3 64x8x32"),
           check_both<SM90_64x16x32_F32E4M3E4M3_SS_TN<>, 16>("e4m3 64x16x32"),
           check_both<SM90_64x32x32_F32E4M3E4M3_SS_TN<>, 32>("e4m3 64x32x32"),
       })
    if (!e.empty()) return e;
  return "";
}

}  // namespace fusedmoe::kernels
