// Random host data for one MoE layer (inputs, routing inputs, weights in their format with
// scales, biases, expert map) and the MoeTensors view of it. Used by the tests, the command-line
// tool and the benchmarks. Values are scaled so that every stage's outputs are O(1).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusedmoe/problem.h"

namespace fusedmoe::testing {

enum class Skew : uint8_t {
  kUniform,    // logits ~ N(0, 1)
  kZipf,       // expert e's logit offset by -1.2 * log(1 + e): a few experts take most tokens
  kOneHot,     // expert 0 (or the first local one) wins every token
  kLocal,      // every token's top-k among the local experts only (logits ~ N(0, 1) there, -30
               // elsewhere; precomputed ids drawn from them): an expert-parallel rank's layer as a
               // layer of its local experts alone (vLLM's dsv3-ep8 figure: E32, top-8); without an
               // expert map, uniform
};
// Its command-line names (uniform, zipf, onehot, local): the name of `s`; parse_skew is false on any other.
const char* skew_name(Skew s);
bool parse_skew(const std::string& name, Skew* s);

struct LayerData {
  MoeProblem problem;
  std::vector<uint16_t> x;            // [T, K] bf16/f16 bits
  std::vector<float> logits_f32;      // [T, E]
  std::vector<uint16_t> logits_bf16;  // [T, E] when the router reads bf16
  std::vector<float> correction_bias; // [E]
  std::vector<int64_t> token_ids;     // [T]
  std::vector<int32_t> hash_table;    // [vocab, k]
  std::vector<int32_t> topk_ids;      // [T, k] (precomputed routing)
  std::vector<float> topk_weights;    // [T, k]
  std::vector<int32_t> expert_map;    // [E]
  std::vector<uint8_t> w1, w2;        // raw bytes in the weight format
  std::vector<uint8_t> w1_scale, w2_scale;  // raw bytes (f32 or ue8m0)
  std::vector<float> b1, b2;
  float act_scale = 0.f, act2_scale = 0.f;  // static per-tensor scales

  // Pointers into the vectors above (host memory); out stays null.
  MoeTensors host_tensors() const;
  size_t weight_bytes() const { return w1.size() + w2.size() + w1_scale.size() + w2_scale.size(); }
};

// Validates `p` (num_tokens set) first; returns false with the reason in `why` if invalid.
// with_weights = false skips the expert weights (w1/w2/scales/biases stay empty): routing and
// dispatch need none, and generating DeepSeek-size weights on the CPU takes minutes.
bool make_layer_data(const MoeProblem& p, uint64_t seed, Skew skew, LayerData* out, std::string* why = nullptr,
                     bool with_weights = true);

// Relative L2 distance of a layer output (p.act_dtype bits: bf16 or fp16) from a float64 result,
// sqrt(sum (got - ref)^2 / sum ref^2) over the finite outputs; the non-finite ones are counted in
// *non_finite, *max_abs (optional) the largest |got - ref| over the finite ones. The GPU tests'
// and `fusedmoe run`'s layer check.
double rel_l2_error(const MoeProblem& p, const std::vector<uint16_t>& got, const std::vector<double>& ref,
                    int64_t* non_finite, double* max_abs = nullptr);
// The same between two float64 results: a's distance from b.
double rel_l2_distance(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace fusedmoe::testing
