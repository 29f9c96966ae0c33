// Device queries through the CUDA runtime, and what this build contains.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/check.h"
#include "fusedmoe/device.h"
#include "kernels/registry.h"

#if defined(FUSEDMOE_WITH_NCCL)
#include <nccl.h>
#endif

namespace fusedmoe {

namespace {
Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    return Status(StatusCode::kNoDevice, std::string(what) + ": " + cudaGetErrorString(e));
  return Status(StatusCode::kCudaError, std::string(what) + ": " + cudaGetErrorString(e));
}
}  // namespace

Status current_device(int* ordinal) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error for later calls
    return Status(StatusCode::kNoDevice, std::string("no CUDA device: ") + cudaGetErrorString(e));
  }
  if (n == 0) return Status(StatusCode::kNoDevice, "no CUDA device");
  return cuda_status(cudaGetDevice(ordinal), "cudaGetDevice");
}

Status query_device(int ordinal, DeviceInfo* info) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return Status(StatusCode::kNoDevice, "no CUDA device");
  }
  FM_REQUIRE(ordinal >= 0 && ordinal < n, kInvalidArgument, "device " << ordinal << " out of range [0, " << n << ")");
  cudaDeviceProp prop{};
  FM_TRY(cuda_status(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties"));
  info->ordinal = ordinal;
  info->name = prop.name;
  info->cc_major = prop.major;
  info->cc_minor = prop.minor;
  info->num_sms = prop.multiProcessorCount;
  info->l2_bytes = static_cast<size_t>(prop.l2CacheSize);
  info->smem_per_block_optin = prop.sharedMemPerBlockOptin;
  info->global_mem_bytes = prop.totalGlobalMem;
  cudaDriverGetVersion(&info->driver_version);
  cudaRuntimeGetVersion(&info->runtime_version);
  return Status::Ok();
}

Status check_device_supported(int ordinal) {
#if !defined(FUSEDMOE_WITH_CUDA)
  (void)ordinal;
  return Status(StatusCode::kNoDevice, "this build has no CUDA kernels (configured with FUSEDMOE_WITH_CUDA=OFF)");
#else
  // Called on every forward(): the answer per device is cached (a device's architecture does
  // not change), and the first query reads two attributes, not the whole property struct.
  static std::atomic<int> cache[64] = {};  // 0 unknown, 1 supported, 2 not
  if (ordinal >= 0 && ordinal < 64 && cache[ordinal].load(std::memory_order_relaxed) == 1) return Status::Ok();
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return Status(StatusCode::kNoDevice, "device " + std::to_string(ordinal) + " cannot be queried");
  }
  if (major == 9 && minor == 0) {
    // Load every kernel now, not at its first launch (src/core/preload.cpp). Not cached on
    // failure: the error is returned and the next check retries.
    static const bool no_preload = [] {
      const char* v = std::getenv("FUSEDMOE_NO_PRELOAD");
      return v != nullptr && v[0] != '\0' && v[0] != '0';
    }();
    if (!no_preload) FM_TRY(preload_kernels(ordinal, nullptr));
    if (ordinal >= 0 && ordinal < 64) cache[ordinal].store(1, std::memory_order_relaxed);
    return Status::Ok();
  }
  DeviceInfo info;
  FM_TRY(query_device(ordinal, &info));
  return Status(StatusCode::kWrongArch, "device " + std::to_string(ordinal) + " (" + info.name + ") is sm_" +
                                            std::to_string(major) + std::to_string(minor) +
                                            "; fusedmoe kernels are built for sm_90a (Hopper H100/H200) only");
#endif
}

BuildInfo build_info() {
  BuildInfo b;
  b.version = FUSEDMOE_VERSION;
#if defined(FUSEDMOE_WITH_CUDA)
  b.with_cuda = true;
  b.cuda_archs = FUSEDMOE_CUDA_ARCHS;
  b.cutlass_version = FUSEDMOE_CUTLASS_VERSION;
#endif
  b.cuda_compile_version = CUDART_VERSION;
#if defined(FUSEDMOE_WITH_NCCL)
  b.with_nccl = true;
  int v = 0;
  if (ncclGetVersion(&v) == ncclSuccess) {
    std::ostringstream os;
    os << v / 10000 << "." << (v / 100) % 100 << "." << v % 100;
    b.nccl_version = os.str();
  }
#endif
  for (const kernels::KernelInstance& k : kernels::compiled_kernel_instances()) {
    b.kernels.push_back(k.name);
    b.kernel_instances.push_back({k.family, k.name});
  }
  Dl_info dl{};
  if (dladdr(reinterpret_cast<const void*>(&build_info), &dl) != 0 && dl.dli_fname != nullptr) {
    b.library_path = dl.dli_fname;
    struct stat st {};
    if (stat(dl.dli_fname, &st) == 0) b.library_bytes = static_cast<size_t>(st.st_size);
  }
  return b;
}

}  // namespace fusedmoe
