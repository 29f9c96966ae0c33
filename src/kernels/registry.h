// The kernel instances compiled into this library (empty without CUDA): their config names for
// `fusedmoe info` and the tests, and their host-side addresses for preload_kernels()
// (src/core/preload.cpp), which loads every one of them once per device so that no first call of
// forward() / dispatch() / inv_rope_fp8_quant() pays a lazy module load (CUDA_MODULE_LOADING=LAZY,
// the default since CUDA 12.2).
//
// Each kernel family lists its instances from the translation unit that launches them:
//   router         router/router_mode_*.cu (top-k instances), router/router_launch.cu (gather)
//   front          front/front_mode_*.cu (fused route + plan + quantise, small batches)
//   plan           dispatch/plan_instances.cu (extern declarations of plan_launch.cu's kernels)
//   permute_quant  quant/permute_quant_instances.cu (names; the module through a test kernel)
//   combine        combine/combine_launch.cu
//   grouped_gemm   gemm/sm90_bf16_grouped_gemm_launch.cu + _swapab_{small,large}.cu
//   grouped_gemm_fp8 gemm/sm90_fp8_grouped_gemm_launch.cu + _swapab.cu (issue #5)
//   cutlass_grouped gemm/cutlass_grouped_gemm_{coop,pingpong}.cu + cutlass_grouped_gemm.cu (activation)
//   gemm_smoke     gemm/sm90_bf16_gemm_smoke_launch.cu
//   inv_rope_quant rope/inv_rope_quant_launch.cu
//   stream_read    util/stream_read.cu
// A new kernel must be added to its family's list (or a new family to compiled_kernel_instances()
// in registry.cu): `fusedmoe info` on the GPU prints any module function no listed name accounts for.
#pragma once
#include <string>
#include <vector>

namespace fusedmoe::kernels {

struct KernelInstance {
  const char* family = "";  // "router", "plan", ... (the list above)
  std::string name;         // spells the config, e.g. "router_topk<bf16,vec8,nv1,sigmoid>"
  // The kernel's host-side address (&kernel<...>, what cudaLaunchKernel / cudaGetFuncBySymbol take),
  // taken in the translation unit that launches it: nvcc (CUDA 13) gives __global__ template stubs
  // internal linkage by default (-static-global-template-stub=true), so the same template
  // instantiated in two .cu files is two kernels in two modules. nullptr when the listing cannot
  // reach the instance (a template instance of a file that lists itself through another kernel of
  // the same file): preload_kernels() loads every function of each listed kernel's module, which
  // covers it.
  const void* fn = nullptr;
};

using KernelList = std::vector<KernelInstance>;

void append_router_instances(KernelList* out);
void append_front_instances(KernelList* out);
void append_plan_instances(KernelList* out);
void append_permute_quant_instances(KernelList* out);
void append_combine_instances(KernelList* out);
void append_grouped_gemm_instances(KernelList* out);
void append_grouped_gemm_fp8_instances(KernelList* out);
void append_cutlass_grouped_instances(KernelList* out);
void append_gemm_smoke_instances(KernelList* out);
void append_inv_rope_quant_instances(KernelList* out);
void append_stream_read_instances(KernelList* out);
void append_weight_pack_instances(KernelList* out);  // the Swap-AB weight packing kernels (pack_weights)

// Every compiled instance, family by family (the order above).
KernelList compiled_kernel_instances();
// Their names.
std::vector<std::string> compiled_kernel_names();

}  // namespace fusedmoe::kernels
