// preload_kernels: load every kernel of the library on a device, once, so that no first call of
// a public entry point pays a lazy module load.
//
// Why: with CUDA_MODULE_LOADING=LAZY (the default on Linux since CUDA 12.2, "Lazy Loading" in the
// CUDA Programming Guide, docs.nvidia.com/cuda/cuda-programming-guide/04-special-topics/lazy-loading.html)
// the runtime loads a module on the first use of one of its kernels and each kernel on its first
// launch. On the H200 that made the first BF16 layer call at a token count needing a new GEMM tile
// take 1.3 ms instead of 0.24 ms (bench --suite coldstart, 2026-11-30).
// How:
//   1. every instance's host-side address (kernels/registry.h, listed by the file that launches it)
//      -> cudaGetFuncBySymbol -> its CUfunction in the current context -> cuFuncGetModule;
//   2. every function of every such module (cuModuleGetFunctionCount / cuModuleEnumerateFunctions)
//      -> cuFuncLoad ("Finalizes function loading for function. Calling this API with a fully
//      loaded function has no effect", cuda.h, CUDA >= 12.4). Step 2 also covers instances whose
//      address the registry cannot take (fn == nullptr) and checks the registry: per family, the
//      functions in its modules must equal the instances it lists.
// The driver functions come from cudaGetDriverEntryPointByVersion (no link against libcuda).
// None of these calls is a stream operation; they run with the thread's capture mode exchanged to
// cudaStreamCaptureModeRelaxed, so a first call inside another stream's global-mode capture is
// legal too.
#include "fusedmoe/device.h"

#if defined(FUSEDMOE_WITH_CUDA)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kernels/front/front_launch.h"
#include "kernels/registry.h"
#endif

namespace fusedmoe {

#if !defined(FUSEDMOE_WITH_CUDA)

Status preload_kernels(int, PreloadReport*) {
  return Status(StatusCode::kNoDevice, "this build has no CUDA kernels (configured with FUSEDMOE_WITH_CUDA=OFF)");
}

#else

namespace {

constexpr int kMaxDevices = 64;

struct Driver {
  PFN_cuFuncGetModule_v11000 func_get_module = nullptr;
  PFN_cuFuncIsLoaded_v12040 func_is_loaded = nullptr;
  PFN_cuFuncLoad_v12040 func_load = nullptr;
  PFN_cuModuleGetFunctionCount_v12040 module_function_count = nullptr;
  PFN_cuModuleEnumerateFunctions_v12040 module_enumerate = nullptr;
  PFN_cuModuleGetLoadingMode_v11070 loading_mode = nullptr;
};

template <class Fn>
bool entry_point(const char* name, unsigned version, Fn* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

Status load_driver(Driver* d) {
  const bool ok = entry_point("cuFuncGetModule", 11000, &d->func_get_module) &&
                  entry_point("cuFuncIsLoaded", 12040, &d->func_is_loaded) &&
                  entry_point("cuFuncLoad", 12040, &d->func_load) &&
                  entry_point("cuModuleGetFunctionCount", 12040, &d->module_function_count) &&
                  entry_point("cuModuleEnumerateFunctions", 12040, &d->module_enumerate);
  (void)entry_point("cuModuleGetLoadingMode", 11070, &d->loading_mode);
  if (!ok) return Status(StatusCode::kCudaError, "preloading kernels needs a CUDA 12.4+ driver (cuFuncLoad not found)");
  return Status::Ok();
}

// Restores the thread's capture mode and current device on scope exit.
struct ScopedThreadState {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  int device = -1;
  explicit ScopedThreadState(int ordinal) {
    cudaThreadExchangeStreamCaptureMode(&mode);  // mode now holds the previous one
    if (cudaGetDevice(&device) == cudaSuccess && device != ordinal) cudaSetDevice(ordinal);
  }
  ~ScopedThreadState() {
    int now = -1;
    if (device >= 0 && cudaGetDevice(&now) == cudaSuccess && now != device) cudaSetDevice(device);
    cudaThreadExchangeStreamCaptureMode(&mode);
  }
};

Status run_preload(int ordinal, PreloadReport* r) {
  const auto t0 = std::chrono::steady_clock::now();
  Driver drv;
  if (Status st = load_driver(&drv); !st.ok()) return st;
  ScopedThreadState guard(ordinal);

  const kernels::KernelList list = kernels::compiled_kernel_instances();
  std::map<std::string, int> listed;                    // family -> instances listed
  std::map<std::string, std::set<CUmodule>> modules;    // family -> modules of its addressed instances
  std::set<CUmodule> all_modules;
  for (const kernels::KernelInstance& k : list) {
    ++listed[k.family];
    if (k.fn == nullptr) continue;
    cudaFunction_t f = nullptr;
    const cudaError_t e = cudaGetFuncBySymbol(&f, k.fn);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return Status(StatusCode::kCudaError, "preloading " + k.name + ": cudaGetFuncBySymbol: " + cudaGetErrorString(e));
    }
    CUfunction cf = reinterpret_cast<CUfunction>(f);
    CUmodule m = nullptr;
    if (drv.func_get_module(&m, cf) != CUDA_SUCCESS || m == nullptr) {
      // No module handle: load this function alone.
      CUfunctionLoadingState s = CU_FUNCTION_LOADING_STATE_LOADED;
      if (drv.func_is_loaded(&s, cf) == CUDA_SUCCESS && s == CU_FUNCTION_LOADING_STATE_UNLOADED) ++r->loaded_by_preload;
      if (drv.func_load(cf) != CUDA_SUCCESS)
        return Status(StatusCode::kCudaError, "preloading " + k.name + ": cuFuncLoad failed");
      ++r->functions;
      r->mismatches.push_back(std::string(k.family) + ": no module handle for " + k.name);
      continue;
    }
    modules[k.family].insert(m);
    all_modules.insert(m);
  }
  std::map<CUmodule, int> functions_of;
  std::vector<CUfunction> fns;
  for (CUmodule m : all_modules) {
    unsigned n = 0;
    if (drv.module_function_count(&n, m) != CUDA_SUCCESS)
      return Status(StatusCode::kCudaError, "preloading kernels: cuModuleGetFunctionCount failed");
    fns.assign(n, nullptr);
    if (n > 0 && drv.module_enumerate(fns.data(), n, m) != CUDA_SUCCESS)
      return Status(StatusCode::kCudaError, "preloading kernels: cuModuleEnumerateFunctions failed");
    for (CUfunction f : fns) {
      CUfunctionLoadingState s = CU_FUNCTION_LOADING_STATE_LOADED;
      if (drv.func_is_loaded(&s, f) == CUDA_SUCCESS && s == CU_FUNCTION_LOADING_STATE_UNLOADED) ++r->loaded_by_preload;
      if (drv.func_load(f) != CUDA_SUCCESS) return Status(StatusCode::kCudaError, "preloading kernels: cuFuncLoad failed");
    }
    functions_of[m] = static_cast<int>(n);
    r->functions += static_cast<int>(n);
  }
  for (const auto& [family, count] : listed) {
    int in_modules = 0;
    for (CUmodule m : modules[family]) in_modules += functions_of[m];
    if (in_modules != count)
      r->mismatches.push_back(family + ": " + std::to_string(count) + " instances listed, " + std::to_string(in_modules) +
                              " functions in its " + std::to_string(modules[family].size()) + " module(s)");
  }
#if defined(FUSEDMOE_WITH_CUDA)
  // The fused front kernel is a cooperative launch; the process's first one has a driver set-up.
  if (const cudaError_t e = kernels::warm_cooperative_launch(); e != cudaSuccess) {
    cudaGetLastError();
    return Status(StatusCode::kCudaError, std::string("preloading kernels: cooperative warm-up: ") + cudaGetErrorString(e));
  }
#endif
  r->instances = static_cast<int>(list.size());
  r->modules = static_cast<int>(all_modules.size());
  CUmoduleLoadingMode mode = CU_MODULE_LAZY_LOADING;
  if (drv.loading_mode != nullptr && drv.loading_mode(&mode) == CUDA_SUCCESS) r->lazy_loading = mode == CU_MODULE_LAZY_LOADING;
  r->milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

}  // namespace

Status preload_kernels(int ordinal, PreloadReport* report) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return Status(StatusCode::kNoDevice, "no CUDA device");
  }
  if (ordinal < 0 || ordinal >= n)
    return Status(StatusCode::kInvalidArgument, "device " + std::to_string(ordinal) + " out of range [0, " +
                                                    std::to_string(n) + ")");
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal) != cudaSuccess) {
    cudaGetLastError();
    return Status(StatusCode::kNoDevice, "device " + std::to_string(ordinal) + " cannot be queried");
  }
  if (major != 9 || minor != 0)
    return Status(StatusCode::kWrongArch, "device " + std::to_string(ordinal) + " is sm_" + std::to_string(major) +
                                              std::to_string(minor) + "; fusedmoe kernels are built for sm_90a only");
  static std::mutex mu;
  static bool done[kMaxDevices] = {};
  static PreloadReport reports[kMaxDevices];
  std::lock_guard<std::mutex> lock(mu);
  if (ordinal < kMaxDevices && done[ordinal]) {
    if (report) *report = reports[ordinal];
    return Status::Ok();
  }
  PreloadReport r;
  if (Status st = run_preload(ordinal, &r); !st.ok()) return st;
  if (ordinal < kMaxDevices) {
    reports[ordinal] = r;
    done[ordinal] = true;
  }
  if (report) *report = r;
  return Status::Ok();
}

#endif

}  // namespace fusedmoe
