// Uses the installed public API only: a preset, validation, the workspace size, a clear error for a
// bad problem, the plan text, and the CPU reference of a tiny layer (no GPU needed).
#include <cstdio>
#include <vector>

#include <fusedmoe/fusedmoe.h>
#include <fusedmoe/reference.h>

namespace fm = fusedmoe;

int main() {
  const fm::Preset* pre = fm::find_preset("dsv3-tp8");
  if (!pre) return std::puts("no preset dsv3-tp8"), 1;
  fm::MoeProblem p = pre->problem;
  p.max_tokens = 256;
  size_t bytes = 0;
  if (!fm::workspace_size(p, &bytes).ok() || bytes == 0) return std::puts("workspace_size failed"), 1;
  fm::MoeProblem bad = p;
  bad.router.top_k = 99;
  const fm::Status st = fm::validate(bad);
  if (st.ok()) return std::puts("a bad problem validated"), 1;
  // The text carries its numbers: the library formats them with its own (private, static) C++
  // runtime while this program links the system's libstdc++.so.6 (session 53: in PyTorch's process
  // an exported runtime was interposed and texts were cut at their first number).
  if (st.message().find("(99)") == std::string::npos)
    return std::printf("error text without its number: '%s'\n", st.to_string().c_str()), 1;
  if (fm::explain(p).find("workspace") == std::string::npos) return std::puts("explain has no plan"), 1;

  fm::MoeProblem q;  // tiny fp16 layer through the float64 reference
  q.num_experts = 4, q.hidden = 16, q.intermediate = 8, q.num_tokens = q.max_tokens = 2;
  q.router = fm::RouterConfig::softmax_topk(2, true);
  q.quant = fm::QuantScheme::fp16();
  q.act_dtype = fm::DType::kFloat16;
  std::vector<uint16_t> x(2 * 16), w1(4 * 16 * 16), w2(4 * 16 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = fm::ref::float_to_fp16(0.5f * static_cast<float>(i % 7) - 1.5f);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = fm::ref::float_to_fp16(0.2f * static_cast<float>(i % 5) - 0.3f);
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = fm::ref::float_to_fp16(0.3f * static_cast<float>(i % 3) - 0.2f);
  std::vector<float> logits = {0.1f, 0.4f, -0.2f, 0.3f, 1.0f, -1.0f, 0.5f, 0.0f};
  fm::MoeTensors t;
  t.x = x.data(), t.router_logits = logits.data(), t.w1 = w1.data(), t.w2 = w2.data();
  fm::ref::LayerResult r;
  const fm::Status rs = fm::ref::forward(q, t, &r);
  if (!rs.ok() || r.out.size() != 32) return std::printf("reference: %s\n", rs.to_string().c_str()), 1;
  std::printf("installed fusedmoe %s: dsv3-tp8 workspace %zu bytes at 256 tokens; '%s'; reference out[0] %.6f\n",
              fm::build_info().version.c_str(), bytes, st.to_string().c_str(), r.out[0]);
  return 0;
}
