// plan_instances.cu — the dispatch plan's kernels for the registry (kernels/registry.h).
// They are defined in plan.cuh and launched from plan_launch.cu; including plan.cuh here would
// define them a second time, so this file declares their host stubs instead (the stub of a
// non-template __global__ function is an ordinary external function of the same name and
// signature) and takes their addresses: the handles of the very kernels plan_launch.cu launches.
// A renamed or re-typed kernel fails the link here: update the list with it.
// TODO(lead): once plan_launch.cu settles, move append_plan_instances() into it and drop this file.
#include "kernels/registry.h"

namespace fusedmoe::kernels::plan_detail {
struct PlanParams;  // plan.cuh
void plan_single_kernel(PlanParams p, int entries_per_warp);
void plan_histogram_kernel(PlanParams p);
void plan_column_scan_kernel(PlanParams p);
void plan_rank_scatter_kernel(PlanParams p);
}  // namespace fusedmoe::kernels::plan_detail

namespace fusedmoe::kernels {
void append_plan_instances(KernelList* out) {
  using namespace plan_detail;
  out->push_back({"plan", "plan_single<1024 threads, <=8192 entries>", reinterpret_cast<const void*>(&plan_single_kernel)});
  out->push_back({"plan", "plan_histogram<chunks of 512-4096>", reinterpret_cast<const void*>(&plan_histogram_kernel)});
  out->push_back({"plan", "plan_column_scan<a group per block>", reinterpret_cast<const void*>(&plan_column_scan_kernel)});
  out->push_back({"plan", "plan_rank_scatter<8 warps/chunk>", reinterpret_cast<const void*>(&plan_rank_scatter_kernel)});
}
}  // namespace fusedmoe::kernels
