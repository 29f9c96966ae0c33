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
// kOk only on a Hopper (sm_90) device and a build with the sm_90a kernels.
Status check_device_supported(int ordinal);
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
  std::vector<std::string> kernels;  // names of the compiled kernel families / instances
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
