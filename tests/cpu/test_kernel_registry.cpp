// The kernel registry behind `fusedmoe info` and preload_kernels(): every family present, names
// unique and spelling their config, addresses unique, consistent with the GEMM names the oracle
// prints. Runs without a GPU (addresses of host stubs only).
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <string>

#include "fusedmoe/device.h"
#include "kernels/registry.h"

#if defined(FUSEDMOE_WITH_CUDA)
#include "kernels/gemm/cutlass_grouped_gemm.h"
#include "kernels/gemm/sm90_bf16_grouped_gemm.h"
#include "kernels/gemm/sm90_fp8_grouped_gemm.h"
#endif

namespace fm = fusedmoe;

namespace {

const char* const kFamilies[] = {"router",       "front",            "plan",       "permute_quant",
                                 "combine",      "grouped_gemm",     "gemm_smoke", "inv_rope_quant",
                                 "stream_read",  "grouped_gemm_fp8", "cutlass_grouped", "weight_pack"};

TEST(KernelRegistry, ListsEveryFamilyWithUniqueNames) {
  const fm::BuildInfo b = fm::build_info();
  if (!b.with_cuda) {
    EXPECT_TRUE(b.kernel_instances.empty());
    GTEST_SKIP() << "CPU-only build: no kernels";
  }
  ASSERT_FALSE(b.kernel_instances.empty());
  ASSERT_EQ(b.kernels.size(), b.kernel_instances.size());
  std::set<std::string> names;
  std::map<std::string, int> per_family;
  for (size_t i = 0; i < b.kernel_instances.size(); ++i) {
    const auto& k = b.kernel_instances[i];
    EXPECT_FALSE(k.name.empty());
    EXPECT_EQ(k.name, b.kernels[i]);
    EXPECT_TRUE(names.insert(k.name).second) << "duplicate instance name " << k.name;
    ++per_family[k.family];
  }
  for (const char* f : kFamilies) EXPECT_GT(per_family[f], 0) << "family " << f << " missing";
  EXPECT_EQ(per_family.size(), std::size(kFamilies)) << "a family not in kFamilies: update the test and the docs";
  // Names spell the config (a few that the library launches for real model shapes).
  for (const char* n : {"router_topk<bf16,vec8,nv1,sigmoid>", "router_topk<f32,vec4,nv2,softmax>",
                        "router_topk<f32,vec1,nv32,logits>", "router_gather<bf16>", "combine<bf16,vpt8,batch1>",
                        "permute_quant<bf16,e4m3,vpt4>", "sm90_bf16_grouped_gemm_128x128x64_s5_gated",
                        "sm90_bf16_grouped_gemm_swapab_64x16x64_s10", "sm90_bf16_grouped_gemm_128x128x64_s4_pingpong",
                        "sm90_bf16_gemm_smoke_128x128x64_s5",
                        "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row_gated",
                        "sm90_fp8e4m3_grouped_gemm_128x128x128_s5_row",
                        "sm90_fp8e4m3_grouped_gemm_swapab_64x8x128_s11_row_gated",
                        "cutlass_sm90_bf16_grouped_gemm_coop_128x256x64",
                        "cutlass_sm90_bf16_grouped_gemm_pingpong_128x128x64"})
    EXPECT_TRUE(names.count(n)) << n << " not listed";
  // The router: 4 row modes x (f32: VEC 1, 2, 4; bf16: VEC 1, 2, 4, 8) x NV up to 32 / VEC, + 2 gathers.
  EXPECT_EQ(per_family["router"], 4 * (6 + 5 + 4 + 6 + 5 + 4 + 3) + 2);
  // The fused front: the router's instances x (one routing block, several: session 20) + the cooperative warm-up.
  EXPECT_EQ(per_family["front"], 2 * 4 * (6 + 5 + 4 + 6 + 5 + 4 + 3) + 1);
  // BF16 grouped GEMM: 5 tiles (normal, swap-AB 8/16/32/64) x (gated, plain), raster-only; the 4
  // Swap-AB tiles also with the balanced / dynamic schedules (session 20).
  // The dense Swap-AB 8/16/32 instances (3-4 CTAs per SM, session 27), with both schedules each.
  // The normal tile's ping-pong GEMM2 (plain epilogue only; ForwardOptions::pingpong_gemm2, session 38).
  EXPECT_EQ(per_family["grouped_gemm"], 10 + 8 + 12 + 1);
  // FP8 grouped GEMM (issue #5): 4 tiles (normal, swap-AB 8/16/32) x (gated, plain), row or block
  // scales; the 3 Swap-AB tiles also with the balanced / dynamic schedules; the 3 Swap-AB tiles again
  // as dense instances (3-4 CTAs per SM, session 27), each with both schedules.
  // The 2-CTA Swap-AB tiles once more with the deferred promotion (FUSEDMOE_FP8_DEFER=1, session 32).
  // The 9 Swap-AB configs' plain kernels again with H quantised by GEMM2 (kHs, both schedules, session 40).
  // The 2-CTA Swap-AB tiles' GEMM1 with gathered rows (kGather: gated and plain, both schedules, session 45).
  // The tail-pair config (tile 32), plain GEMM2 and kHs only (session 59).
  EXPECT_EQ(per_family["grouped_gemm_fp8"], 8 + 6 + 12 + 12 + 12 + 18 + 12 + 2);  // + the pair instances (session 34)
  // The Swap-AB weight packing kernels, BF16 and FP8 (pack_weights, session 35).
  EXPECT_EQ(per_family["weight_pack"], 2);
  // CUTLASS grouped GEMMs: 5 BF16 configurations x (kernel, setup), the gated and plain activation,
  // GEMM1 with the activation in its epilogue, its setup and the gate / up block copy (session 43);
  // 3 FP8 blockwise configurations x (kernel, setup) and their scale kernel, 3 FP8 row-scaled ones x
  // (kernel, setup) (CutlassFp8Config, session 46; one configuration each before).
  // BF16 cooperative 128x256 on 1x2 clusters x (kernel, setup), the FP8 blockwise GEMM1 with the
  // activation in its epilogue and its setup (session 46).
  EXPECT_EQ(per_family["cutlass_grouped"], 32);
  EXPECT_EQ(b.kernel_instances.size(), size_t(587)) << "total instances (586 before the code-sweep diagnosis kernel, 584 before the FP8 tail-pair instances, 580 before the combine's 4 bias instances, 568 before the CUTLASS FP8 configurations, the BF16 1x2 one and the FP8 GEMM1 with the activation, 556 before the FP8 _gather ones, 553 before CUTLASS's GEMM1 with the activation, 350 before the one-block front instances, 482 before the dense Swap-AB ones, 506 before the FP8 _defer ones, 530 before the weight packing kernels, 532 before the ping-pong GEMM2, 533 before CUTLASS's ping-pong 64x256, 535 before the FP8 GEMM2 _hs ones): update docs too";
}

#if defined(FUSEDMOE_WITH_CUDA)
TEST(KernelRegistry, AddressesAreUniqueAndEveryFamilyReachesItsModule) {
  const fm::kernels::KernelList list = fm::kernels::compiled_kernel_instances();
  std::set<const void*> seen;
  std::map<std::string, int> addressed;
  for (const auto& k : list) {
    if (k.fn == nullptr) continue;
    EXPECT_TRUE(seen.insert(k.fn).second) << k.name << " shares an address with another instance";
    ++addressed[k.family];
  }
  // preload_kernels() reaches a family's module through its addressed instances.
  for (const char* f : kFamilies) EXPECT_GT(addressed[f], 0) << "family " << f << " has no addressed instance";
}

TEST(KernelRegistry, GemmNamesOfTheOracleAreCompiledInstances) {
  const auto names = fm::kernels::compiled_kernel_names();
  int n = 0;
  const char* const* gemm = fm::kernels::grouped_gemm_instance_names(&n);
  ASSERT_GT(n, 0);
  for (int i = 0; i < n; ++i) {
    std::string want = gemm[i];  // "sm90_bf16_grouped_gemm1_..." -> "sm90_bf16_grouped_gemm_..."
    const size_t at = want.find("gemm1_") != std::string::npos ? want.find("gemm1_") : want.find("gemm2_");
    ASSERT_NE(at, std::string::npos) << want;
    want.erase(at + 4, 1);
    bool found = false;
    for (const auto& s : names) found = found || s == want || s == want + "_gated";
    EXPECT_TRUE(found) << gemm[i] << " has no compiled instance " << want;
  }
}

TEST(KernelRegistry, Fp8GemmNamesAreTheRegisteredInstances) {
  std::set<std::string> listed;
  for (const auto& k : fm::kernels::compiled_kernel_instances())
    if (std::string(k.family) == "grouped_gemm_fp8") listed.insert(k.name);
  int n = 0;
  const char* const* fp8 = fm::kernels::fp8_grouped_gemm_instance_names(&n);
  ASSERT_EQ(n, 82);
  std::set<std::string> named(fp8, fp8 + n);
  EXPECT_EQ(named, listed);
}

// The CUTLASS FP8 configurations (CutlassFp8Config): every one named distinctly for both schemes,
// listed in the registry under that name; kAuto resolving to the cooperative 128x128 on 1x2
// clusters where the 128-wide N tiles pair up (session 46, measured), else on 1x1 clusters; a value
// out of range to "?".
TEST(KernelRegistry, CutlassFp8ConfigsAreNamedAndListed) {
  namespace k = fm::kernels;
  std::set<std::string> listed;
  for (const auto& ki : k::compiled_kernel_instances())
    if (std::string(ki.family) == "cutlass_grouped") listed.insert(ki.name);
  std::set<std::string> names, briefs;
  for (int c = 1; c <= k::kCutlassFp8Configs; ++c) {
    const auto cfg = static_cast<k::CutlassFp8Config>(c);
    for (const char* name : {k::cutlass_fp8_block_gemm_name(cfg, 512), k::cutlass_fp8_row_gemm_name(cfg, 512)}) {
      EXPECT_TRUE(names.insert(name).second) << name;
      EXPECT_EQ(listed.count(name), 1u) << name << " is not a registered instance";
      EXPECT_EQ(listed.count(std::string(name) + "<setup>"), 1u) << name << "'s setup kernel is not registered";
      EXPECT_EQ(std::string(name).find("_c1x2") != std::string::npos, c != 1) << name;
    }
    EXPECT_TRUE(briefs.insert(k::cutlass_fp8_config_brief(cfg, 512)).second);
  }
  EXPECT_EQ(listed.count("cutlass_fp8_block_scales"), 1u);
  for (int n : {256, 512, 768, 4096, 7168}) EXPECT_EQ(k::cutlass_fp8_auto_config(n), k::CutlassFp8Config::kCoop128x128Cluster1x2) << n;
  for (int n : {128, 384, 208, 0}) EXPECT_EQ(k::cutlass_fp8_auto_config(n), k::CutlassFp8Config::kCoop128x128) << n;
  EXPECT_STREQ(k::cutlass_fp8_block_gemm_name(k::CutlassFp8Config::kAuto, 7168),
               k::cutlass_fp8_block_gemm_name(k::CutlassFp8Config::kCoop128x128Cluster1x2, 7168));
  EXPECT_STREQ(k::cutlass_fp8_config_brief(k::CutlassFp8Config::kAuto, 384), "coop 128x128");
  EXPECT_STREQ(k::cutlass_fp8_config_brief(k::CutlassFp8Config::kAuto, 512), "coop 128x128 c1x2");
  EXPECT_STREQ(k::cutlass_fp8_row_gemm_name(static_cast<k::CutlassFp8Config>(k::kCutlassFp8Configs + 1), 512), "?");
}
#endif

}  // namespace
