// The CUTLASS grouped GEMM, ping-pong 64x256x64 (cutlass_grouped_gemm.h): 64-row tiles, so that an
// expert's last, partial tile pads at most 63 rows (128-row tiles: 127): its own translation unit.
#include "kernels/gemm/cutlass_grouped_gemm.cuh"
#include "kernels/gemm/cutlass_grouped_gemm_internal.h"

namespace fusedmoe::kernels::cutlass_grouped {

namespace {
using Config = Bf16GroupedGemm<cute::Shape<cute::_64, cute::_256, cute::_64>, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong,
                               cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong>;
}  // namespace

cudaError_t run_pingpong64x256(const CutlassGroupedArgs& a, cudaStream_t stream) { return run<Config>(a, stream); }
size_t scratch_pingpong64x256(int groups) { return scratch_bytes<Config>(groups); }
void append_pingpong64x256(KernelList* out, const char* name, const char* setup_name) {
  out->push_back({"cutlass_grouped", name, reinterpret_cast<const void*>(&cutlass::device_kernel<Config::Kernel>)});
  out->push_back({"cutlass_grouped", setup_name, reinterpret_cast<const void*>(&setup_groups_kernel<Config>)});
}

}  // namespace fusedmoe::kernels::cutlass_grouped
