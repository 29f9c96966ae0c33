// fusedmoe/device.h — the device the kernels run on, and what this build contains.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fusedmoe/status.h"

namespace fusedmoe {

struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int num_sms = 0;
  size_t l2_bytes = 0;
  size_t smem_per_block_optin = 0;
  size_t global_mem_bytes = 0;
  int driver_version = 0, runtime_version = 0;
};

// Fills `info` for device `ordinal`; kNoDevice when there is none or the build has no CUDA.
Status query_device(int ordinal, DeviceInfo* info);
// kOk only on a Hopper (sm_90) device and a build with the sm_90a kernels. The first successful
// check of a device also preloads every kernel of the library on it (preload_kernels below), so
// that no first call of forward() / dispatch() / inv_rope_fp8_quant() pays a lazy module load;
// every later check is one atomic load (cached per device). forward(), dispatch() and
// inv_rope_fp8_quant() run this check, so the first of them does the preload: make that first
// call (or an explicit preload_kernels) before capturing a CUDA graph, so that the load time is
// not spent inside the capture. (A first call during a capture is still legal: loading is no
// stream operation, and the preload runs in the relaxed capture mode of its thread.)
// A failed preload is returned (kCudaError) and retried at the next check.
Status check_device_supported(int ordinal);

// What preload_kernels did on a device (the first, working call; later calls return it again).
struct PreloadReport {
  int instances = 0;        // kernel instances listed by the library (BuildInfo::kernel_instances)
  int modules = 0;          // CUDA modules holding them (one per .cu file with kernels)
  int functions = 0;        // functions in those modules, every one loaded now
  int loaded_by_preload = 0;  // of those, functions that were not loaded before the preload
  double milliseconds = 0;  // host time of the preload
  // One line per kernel family whose modules hold a different number of functions than the
  // family lists (a kernel missing from the registry); empty when they agree.
  std::vector<std::string> mismatches;
  bool lazy_loading = true;  // the driver reports CUDA_MODULE_LOADING=LAZY (the default)
};
// Loads every kernel instance of the library on device `ordinal` (CUDA >= 12.4 driver API
// cuFuncLoad, through cudaGetDriverEntryPointByVersion: libcuda is not linked), once per device.
// Thread-safe; needs no stream and allocates no device memory of ours (the driver allocates the
// code). kNoDevice / kWrongArch as check_device_supported. The environment variable
// FUSEDMOE_NO_PRELOAD=1 turns the automatic preload of check_device_supported off (a diagnostic:
// `fusedmoe bench --suite coldstart` then shows what lazy loading costs a first call).
Status preload_kernels(int ordinal, PreloadReport* report = nullptr);
// The device of the calling thread (cudaGetDevice).
Status current_device(int* ordinal);

struct BuildInfo {
  std::string version;
  bool with_cuda = false;
  bool with_nccl = false;
  std::string cuda_archs;        // e.g. "90a"
  int cuda_compile_version = 0;  // CUDART_VERSION at build time
  std::string cutlass_version;
  std::string nccl_version;      // from the library linked, "" without NCCL
  std::vector<std::string> kernels;  // names of the compiled kernel instances (spelling their config)
  struct KernelInstance {
    std::string family;  // "router", "plan", "permute_quant", "combine", "grouped_gemm", ...
    std::string name;    // the same as in `kernels`
  };
  std::vector<KernelInstance> kernel_instances;
  std::string library_path;          // the loaded libfusedmoe
  size_t library_bytes = 0;
};

BuildInfo build_info();

}  // namespace fusedmoe

namespace fusedmoe {
// Runs the WGMMA + TMA smoke GEMM (M x N x K, bf16) on the current device against a float64 CPU
// reference; fills the relative error and the kernel time. kNoDevice / kWrongArch without a
// Hopper GPU. Allocates and synchronises: a diagnostic, never on a hot path.
struct SelfTestResult {
  std::string kernel;
  int m = 0, n = 0, k = 0;
  double rel_error = 0.0;
  double time_us = 0.0;
  double tflops = 0.0;
};
Status self_test(int m, int n, int k, SelfTestResult* result);
}  // namespace fusedmoe
