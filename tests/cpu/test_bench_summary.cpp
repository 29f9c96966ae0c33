// `fusedmoe bench`'s summary of forced variants against the default (tools/bench_common.h:
// variant_summary): ratios per (case, tokens) point, layer rows only, per-stage rows ignored.
#include <gtest/gtest.h>

#if __has_include(<cuda_runtime.h>)
#include "bench_common.h"

namespace {
fusedmoe_bench::Row row(const char* c, const char* stage, int64_t t, double us) {
  fusedmoe_bench::Row r;
  r.case_name = c;
  r.stage = stage;
  r.tokens = t;
  r.us = us;
  return r;
}
}  // namespace

TEST(BenchSummary, VariantsAgainstTheDefault) {
  const std::vector<fusedmoe_bench::Row> rows = {
      row("a", "layer bf16 x", 1, 10), row("a", "stage gemm1", 1, 5),
      row("a", "layer bf16 y [on]", 1, 12), row("a", "stage gemm1", 1, 6),  // (other tiles: still compared)
      row("a", "layer bf16 x [off]", 1, 10.05),
      row("a", "layer bf16 x", 16, 100), row("a", "layer bf16 y [on]", 16, 90), row("a", "layer bf16 x [off]", 16, 100),
      row("b", "layer bf16 x [on]", 16, 50),  // no default for this point: left out
      row("a", "layer from precomputed top-k (no router)", 1, 8),
      row("a", "layer from precomputed top-k (no router) [on]", 1, 8.8)};
  const std::string s = fusedmoe_bench::variant_summary(rows);
  // [on]: 1.2, 0.9 and 1.1 -> (1.188)^(1/3) = 1.059
  EXPECT_NE(s.find("[on]: 1.059 over 3 points (faster by > 1 % at 1, slower at 2; 0.900-1.200)"), std::string::npos) << s;
  EXPECT_NE(s.find("[off]: 1.002 over 2 points (faster by > 1 % at 0, slower at 0; 1.000-1.005)"), std::string::npos) << s;
  EXPECT_LT(s.find("[on]"), s.find("[off]"));  // in order of appearance
  EXPECT_TRUE(fusedmoe_bench::variant_summary({rows[0], rows[1]}).empty());
}
#endif
