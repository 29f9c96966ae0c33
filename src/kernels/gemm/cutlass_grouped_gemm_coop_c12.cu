// The CUTLASS grouped GEMM, cooperative 128x256x64, cluster 1x2 (the two CTAs of a cluster compute
// neighbouring N tiles of the same rows: each activation tile loaded once and multicast to both)
// (cutlass_grouped_gemm.h): its own translation unit.
#include "kernels/gemm/cutlass_grouped_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

namespace {
using Config = Bf16GroupedGemm<cute::Shape<cute::_128, cute::_256, cute::_64>, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedCooperative,
                               cutlass::epilogue::PtrArrayTmaWarpSpecializedCooperative, cute::Shape<cute::_1, cute::_2, cute::_1>>;
}  // namespace

cudaError_t run_coop128x256c12(const CutlassGroupedArgs& a, cudaStream_t stream) { return run<Config>(a, stream); }
size_t scratch_coop128x256c12(int groups) { return scratch_bytes<Config>(groups); }
void append_coop128x256c12(KernelList* out, const char* name, const char* setup_name) {
  out->push_back({"cutlass_grouped", name, reinterpret_cast<const void*>(&cutlass::device_kernel<Config::Kernel>)});
  out->push_back({"cutlass_grouped", setup_name, reinterpret_cast<const void*>(&setup_groups_kernel<Config>)});
}

}  // namespace fusedmoe::kernels::cutlass_grouped
