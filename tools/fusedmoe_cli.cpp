// fusedmoe — command-line tool.
//   fusedmoe info                       build, device and compiled kernels
//   fusedmoe presets                    the built-in layer shapes
//   fusedmoe run [--preset P] [--tokens T] [--quant Q] [--seed S] [--skew uniform|zipf|onehot|local] [--cpu]
//                                       one MoE layer on a built-in preset with random weights: on a
//                                       GPU through forward(), checked against the float64 reference
//                                       and timed (run_gpu.cpp); without one the reference alone
//   fusedmoe explain [--preset P] [--tokens T] [--quant Q]   the plan forward() would run, and why
//   fusedmoe bench [--suite S] [--tokens 1,16,256] [--cases a,b] [--pdl] [--staged] [--gather] [--front] [--splitk] [--balanced] [--balanced1] [--dense] [--dense1] [--scales] [--cutlass] [--cutlass-gemm2] [--stages] [--precomputed] [--csv F] [--json F]   benchmarks (GPU)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fusedmoe/fusedmoe.h"
#include "fusedmoe/reference.h"
#include "testing/layer_data.h"
#if defined(FUSEDMOE_WITH_CUDA)
#include "bench.h"
#include "run_gpu.h"
#endif

namespace fm = fusedmoe;

namespace {

struct Args {
  std::string command = "run";
  std::string preset;
  int64_t tokens = -1;
  uint64_t seed = 0;
  bool seed_given = false;
  bool cpu = false;
  fm::testing::Skew skew = fm::testing::Skew::kUniform;
  float local_slots = 0.f;  // --local-slots: MoeProblem::expected_local_slots (run, explain)
  std::string quant;        // --quant: the preset's weights in another scheme (run, explain)
};

void usage() {
  std::puts(
      "usage: fusedmoe <command> [options]\n"
      "commands:\n"
      "  run       run one MoE layer of a built-in preset (default command)\n"
      "  info      build, device and compiled kernels\n"
      "  presets   list the built-in presets\n"
      "  explain   print the plan forward() would run, and why\n"
      "  bench     benchmarks on the GPU: --suite dispatch|layer|crossover|coldstart|rope [--tokens 1,16,256]\n"
      "            [--cases a,b] [--pdl] [--staged] [--gather] [--front] [--splitk] [--balanced] [--balanced1] [--dense] [--scales] [--cutlass] [--cutlass-gemm2]\n"
      "            (--cases: suite cases, or any preset of `fusedmoe presets`)\n"
      "            (layer: also with each switch forced: PDL on/off, staged epilogue off, gathered GEMM1 rows\n"
      "            on/off, split-K off, balanced GEMM2 on/off, row-order FP8 scales, GEMM1 gathered + GEMM2 on\n"
      "            CUTLASS on/off; each backend forced: grouped, CUTLASS grouped GEMMs)\n"
      "            [--ksplits 1,2] [--ksplits1 2,4] [--tpc 2] [--tpc1 3] [--tpc1d 2] [--tile2 16] [--early 0,3] [--early2 3] (layer: tuning overrides forced)\n"
      "            [--evict] (layer: the weights' L2 policy evict_first forced on / off)\n"
      "            [--stages] [--precomputed] (layer: per-stage times; from precomputed top-k)\n"
      "            [--trace] [--trace-csv F] [--cold-inputs] (layer: per-CTA GEMM timeline; inputs left\n"
      "            cold after the L2 flush) [--flushed] (dispatch: also timed after an L2 flush, and after\n"
      "            the flush and a code sweep that evicts the SMs' instruction caches)\n"
      "            [--skew uniform|zipf|onehot|local|bias] (layer, crossover, dispatch: the routing of\n"
      "            shared/benchmark-protocol.md, uniform by default (correction biases zero), a few hot\n"
      "            experts, or one; local: every token among an EP rank's local experts; bias: the test\n"
      "            data's random correction bias, which skews the loads) [--local-hint] (layer: the\n"
      "            problem's expected_local_slots = top_k, the oracle's routing hint)\n"
      "            [--peer F] [--csv F] [--json F]\n"
      "options:\n"
      "  --preset NAME   layer shape (see `fusedmoe presets`); default: dsv3-tp8 on a GPU, tiny-dsv3 on CPU\n"
      "  --tokens T      tokens in the batch (default 4)\n"
      "  --seed S        random seed (default: fresh)\n"
      "  --skew KIND     routing: uniform | zipf | onehot | local\n"
      "  --local-slots S routing hint: routed slots per token expected on this GPU's experts\n"
      "                  (MoeProblem::expected_local_slots; 0 = uniform, up to top_k)\n"
      "  --quant Q       the preset's expert weights in another scheme: bf16, fp8t (per tensor, static\n"
      "                  activation scales), fp8c (per channel, per-token activations), fp8b (128x128\n"
      "                  blocks, 1x128 activation groups, f32 scales), fp8b-ue8m0 (UE8M0 scales)\n"
      "  --cpu           use the CPU reference even when a GPU is present");
}

bool parse(int argc, char** argv, Args* a) {
  int i = 1;
  if (i < argc && argv[i][0] != '-') a->command = argv[i++];
  for (; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "fusedmoe: %s needs a value\n", name);
        std::exit(2);
      }
      return argv[++i];
    };
    if (s == "--preset") a->preset = value("--preset");
    else if (s == "--tokens") a->tokens = std::atoll(value("--tokens"));
    else if (s == "--seed") { a->seed = std::strtoull(value("--seed"), nullptr, 10); a->seed_given = true; }
    else if (s == "--cpu") a->cpu = true;
    else if (s == "--local-slots") a->local_slots = std::strtof(value("--local-slots"), nullptr);
    else if (s == "--quant") a->quant = value("--quant");
    else if (s == "--skew") {
      const std::string k = value("--skew");
      if (!fm::testing::parse_skew(k, &a->skew)) { std::fprintf(stderr, "fusedmoe: unknown skew '%s'\n", k.c_str()); return false; }
    } else if (s == "-h" || s == "--help") { usage(); std::exit(0); }
    else { std::fprintf(stderr, "fusedmoe: unknown option '%s'\n", s.c_str()); return false; }
  }
  return true;
}

// The supported GPU, or the reason there is none.
fm::Status gpu_status(fm::DeviceInfo* info) {
  int dev = 0;
  fm::Status st = fm::current_device(&dev);
  if (st.ok()) st = fm::query_device(dev, info);
  if (st.ok()) st = fm::check_device_supported(dev);
  return st;
}

int cmd_info() {
  const fm::BuildInfo b = fm::build_info();
  std::printf("fusedmoe %s\n", b.version.c_str());
  std::printf("build: CUDA kernels %s", b.with_cuda ? "yes" : "no (FUSEDMOE_WITH_CUDA=OFF)");
  if (b.with_cuda) std::printf(" (sm_%s, CUDA %d.%d, CUTLASS %s)", b.cuda_archs.c_str(), b.cuda_compile_version / 1000,
                               (b.cuda_compile_version % 1000) / 10, b.cutlass_version.c_str());
  std::printf("; NCCL %s\n", b.with_nccl ? b.nccl_version.c_str() : "no");
  std::printf("library: %s (%zu bytes, %.1f MB)\n", b.library_path.c_str(), b.library_bytes, b.library_bytes / 1e6);
  // Instances by family, in the registry's order.
  std::vector<std::pair<std::string, int>> families;
  for (const auto& k : b.kernel_instances) {
    if (families.empty() || families.back().first != k.family) families.push_back({k.family, 0});
    ++families.back().second;
  }
  std::string per_family;
  for (const auto& [f, n] : families) per_family += (per_family.empty() ? "" : ", ") + f + " " + std::to_string(n);
  std::printf("kernels compiled in: %zu instances (%s)\n", b.kernel_instances.size(), per_family.c_str());
  for (const auto& k : b.kernel_instances) std::printf("  %-15s %s\n", k.family.c_str(), k.name.c_str());
  fm::DeviceInfo d;
  int dev = 0;
  fm::PreloadReport pre;
  // Preload explicitly before the device check (which would do it silently) to print the report.
  const fm::Status pst = fm::current_device(&dev).ok() ? fm::preload_kernels(dev, &pre) : fm::Status::Ok();
  const fm::Status st = gpu_status(&d);
  if (st.ok()) {
    if (!pst.ok()) {
      std::printf("preload: FAILED: %s\n", pst.to_string().c_str());
    } else {
      std::printf("preload: %d instances in %d modules, %d functions loaded (%d of them by the preload) in %.1f ms; "
                  "lazy loading %s; registry %s\n",
                  pre.instances, pre.modules, pre.functions, pre.loaded_by_preload, pre.milliseconds,
                  pre.lazy_loading ? "on" : "off", pre.mismatches.empty() ? "complete" : "INCOMPLETE:");
      for (const auto& m : pre.mismatches) std::printf("  %s\n", m.c_str());
    }
  }
  if (d.ordinal >= 0)
    std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB, L2 %.0f MB, driver %d, runtime %d\n", d.ordinal,
                d.name.c_str(), d.cc_major, d.cc_minor, d.num_sms, d.global_mem_bytes / 1073741824.0,
                d.l2_bytes / 1e6, d.driver_version, d.runtime_version);
  if (!st.ok()) {
    std::printf("GPU: not usable: %s\n", st.to_string().c_str());
    return 0;
  }
  fm::SelfTestResult r;
  const fm::Status t = fm::self_test(1024, 1024, 1024, &r);
  if (t.ok())
    std::printf("self-test: %s %dx%dx%d rel_err %.2e, %.1f us, %.0f TFLOP/s\n", r.kernel.c_str(), r.m, r.n, r.k,
                r.rel_error, r.time_us, r.tflops);
  else
    std::printf("self-test: FAILED: %s\n", t.to_string().c_str());
  return t.ok() && r.rel_error < 1e-2 ? 0 : 1;
}

int cmd_presets() {
  for (const auto& p : fm::presets()) std::printf("%-14s %s\n", p.name.c_str(), p.description.c_str());
  return 0;
}

const fm::Preset* pick_preset(const Args& a, bool gpu) {
  const std::string name = !a.preset.empty() ? a.preset : (gpu ? "dsv3-tp8" : "tiny-dsv3");
  const fm::Preset* p = fm::find_preset(name);
  if (!p) std::fprintf(stderr, "fusedmoe: unknown preset '%s' (see `fusedmoe presets`)\n", name.c_str());
  return p;
}

// The problem of `a`: the preset's, with the token count, the routing hint and --quant applied.
// False (after saying why) for an unknown --quant or a scheme the shapes cannot take.
bool make_problem(const Args& a, const fm::Preset& pr, fm::MoeProblem* out) {
  fm::MoeProblem p = pr.problem;
  p.num_tokens = a.tokens >= 0 ? a.tokens : 4;
  p.max_tokens = p.num_tokens;
  p.expected_local_slots = a.local_slots;
  if (!a.quant.empty()) {
    if (a.quant == "bf16") p.quant = fm::QuantScheme::bf16();
    else if (a.quant == "fp8t") p.quant = fm::QuantScheme::fp8_per_tensor(false);
    else if (a.quant == "fp8c") p.quant = fm::QuantScheme::fp8_per_channel();
    else if (a.quant == "fp8b") p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kFloat32);
    else if (a.quant == "fp8b-ue8m0") p.quant = fm::QuantScheme::fp8_block128(fm::ScaleFormat::kUE8M0);
    else {
      std::fprintf(stderr, "fusedmoe: unknown --quant '%s' (bf16, fp8t, fp8c, fp8b, fp8b-ue8m0)\n", a.quant.c_str());
      return false;
    }
  }
  const fm::Status st = fm::validate(p);
  if (!st.ok()) {
    std::fprintf(stderr, "fusedmoe: %s%s%s: %s\n", pr.name.c_str(), a.quant.empty() ? "" : " with --quant ",
                 a.quant.c_str(), st.to_string().c_str());
    return false;
  }
  *out = p;
  return true;
}

int cmd_explain(const Args& a) {
  fm::DeviceInfo d;
  const fm::Preset* pr = pick_preset(a, gpu_status(&d).ok());
  if (!pr) return 2;
  fm::MoeProblem p;
  if (!make_problem(a, *pr, &p)) return 2;
  std::cout << pr->name << ": " << pr->description << (a.quant.empty() ? "" : " (--quant " + a.quant + ")") << "\n"
            << fm::explain(p);
  return 0;
}

// The CPU reference on one layer: route -> plan -> GEMMs -> combine, with a summary.
int run_reference(const fm::MoeProblem& p, const std::string& name, uint64_t seed, fm::testing::Skew skew) {
  fm::testing::LayerData data;
  std::string why;
  if (!fm::testing::make_layer_data(p, seed, skew, &data, &why)) {
    std::fprintf(stderr, "fusedmoe: %s\n", why.c_str());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  fm::ref::LayerResult res;
  const fm::Status st = fm::ref::forward(p, data.host_tensors(), &res);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::fprintf(stderr, "fusedmoe: reference failed: %s\n", st.to_string().c_str());
    return 1;
  }
  std::set<int> touched(res.routing.ids.begin(), res.routing.ids.end());
  double sumsq = 0.0, maxabs = 0.0;
  bool finite = true;
  for (double v : res.out) {
    finite = finite && std::isfinite(v);
    sumsq += v * v;
    maxabs = std::max(maxabs, std::fabs(v));
  }
  std::printf("CPU reference (float64) on %s, %lld tokens, seed %llu: %.1f ms\n", name.c_str(),
              static_cast<long long>(p.num_tokens), static_cast<unsigned long long>(seed), ms);
  std::printf("  experts touched: %zu of %d; grouped rows: %lld; weights read: %.1f MB of %.1f MB\n", touched.size(),
              p.num_experts, static_cast<long long>(res.plan.num_rows()),
              data.weight_bytes() * (double(touched.size()) / p.num_experts) / 1e6, data.weight_bytes() / 1e6);
  for (int64_t t = 0; t < std::min<int64_t>(p.num_tokens, 4); ++t) {
    std::printf("  token %lld -> experts", static_cast<long long>(t));
    for (int j = 0; j < p.top_k(); ++j)
      std::printf(" %d(%.3f)", res.routing.ids[t * p.top_k() + j], res.routing.weights[t * p.top_k() + j]);
    std::printf("  out[0..3] = %.4f %.4f %.4f %.4f\n", res.out[t * p.hidden], res.out[t * p.hidden + 1],
                res.out[t * p.hidden + 2], res.out[t * p.hidden + 3]);
  }
  std::printf("  output [%lld x %d]: rms %.4f, max |y| %.4f, all finite: %s\n", static_cast<long long>(p.num_tokens),
              p.hidden, std::sqrt(sumsq / std::max<size_t>(1, res.out.size())), maxabs, finite ? "yes" : "NO");
  return finite ? 0 : 1;
}

int cmd_run(const Args& a) {
  fm::DeviceInfo d;
  const fm::Status gpu = gpu_status(&d);
  const bool use_gpu = gpu.ok() && !a.cpu;
  const uint64_t seed = a.seed_given ? a.seed : std::random_device{}();
  if (!gpu.ok()) std::printf("No usable GPU (%s): running the CPU reference on a small preset.\n", gpu.to_string().c_str());
  const fm::Preset* pr = pick_preset(a, use_gpu);
  if (!pr) return 2;
  fm::MoeProblem p;
  if (!make_problem(a, *pr, &p)) return 2;
  std::cout << pr->name << ": " << pr->description << (a.quant.empty() ? "" : " (--quant " + a.quant + ")") << "\n";
  if (!use_gpu) return run_reference(p, pr->name, seed, a.skew);

  std::printf("device %d: %s (sm_%d%d, %d SMs)\n", d.ordinal, d.name.c_str(), d.cc_major, d.cc_minor, d.num_sms);
  // The plan the library runs, then the layer itself on the GPU, checked against the float64
  // reference (the whole layer at the preset's real size) and timed.
  std::cout << fm::explain(p);
#if defined(FUSEDMOE_WITH_CUDA)
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return fusedmoe_cli::run_layer_gpu(p, pr->name, seed, a.skew);
#else
  return run_reference(p, pr->name, seed, a.skew);  // (not reached: no GPU without CUDA kernels)
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "bench") == 0) {
#if defined(FUSEDMOE_WITH_CUDA)
    return cmd_bench(argc, argv);
#else
    std::puts("fusedmoe bench: this build has no CUDA kernels (FUSEDMOE_WITH_CUDA=OFF)");
    return 1;
#endif
  }
  Args a;
  if (!parse(argc, argv, &a)) {
    usage();
    return 2;
  }
  if (a.command == "info") return cmd_info();
  if (a.command == "presets") return cmd_presets();
  if (a.command == "run") return cmd_run(a);
  if (a.command == "explain") return cmd_explain(a);
  if (a.command == "help") { usage(); return 0; }
  std::fprintf(stderr, "fusedmoe: unknown command '%s'\n", a.command.c_str());
  usage();
  return 2;
}
