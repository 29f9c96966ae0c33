// Session 29: does %gridid (PTX: "the temporal grid launch number for this context") differ for
// every launch: plain launches on two streams, cooperative launches, and the kernel nodes of a
// CUDA graph replayed many times? Build: nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o gridid_probe gridid_probe.cu
#include <cuda_runtime.h>

#include <cstdio>
#include <set>
#include <vector>

__global__ void probe(unsigned long long* out, int i) {
  unsigned long long g;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
  __shared__ unsigned long long first;
  if (threadIdx.x == 0) first = g;
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0) out[i] = g;
  if (g != first) out[i] = ~0ull;  // every thread must see the same value
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0 && g != out[i]) out[i] = ~1ull;  // (racy; informational)
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

int main() {
  const int kPlain = 4000, kNodes = 16, kReplays = 200;
  unsigned long long* d;
  CK(cudaMalloc(&d, sizeof(unsigned long long) * (kPlain + kNodes)));
  cudaStream_t s[2];
  CK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
  std::vector<unsigned long long> all;
  // plain launches, two streams (concurrent), and cooperative ones
  for (int i = 0; i < kPlain; ++i) {
    if (i % 4 == 3) {
      int idx = i;
      void* args[] = {&d, &idx};
      CK(cudaLaunchCooperativeKernel((void*)probe, dim3(8), dim3(128), args, 0, s[i & 1]));
    } else {
      probe<<<8, 128, 0, s[i & 1]>>>(d, i);
    }
  }
  CK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(kPlain);
  CK(cudaMemcpy(h.data(), d, sizeof(unsigned long long) * kPlain, cudaMemcpyDeviceToHost));
  all.insert(all.end(), h.begin(), h.end());
  std::printf("plain: first %llu %llu %llu %llu, last %llu\n", h[0], h[1], h[2], h[3], h[kPlain - 1]);
  // a graph of kNodes kernel nodes (every 4th cooperative), replayed
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeThreadLocal));
  for (int n = 0; n < kNodes; ++n) {
    int idx = kPlain + n;
    if (n % 4 == 3) {
      void* args[] = {&d, &idx};
      CK(cudaLaunchCooperativeKernel((void*)probe, dim3(8), dim3(128), args, 0, s[0]));
    } else {
      probe<<<8, 128, 0, s[0]>>>(d, idx);
    }
  }
  CK(cudaStreamEndCapture(s[0], &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  std::vector<unsigned long long> r(kNodes);
  for (int rep = 0; rep < kReplays; ++rep) {
    CK(cudaGraphLaunch(ge, s[0]));
    CK(cudaStreamSynchronize(s[0]));
    CK(cudaMemcpy(r.data(), d + kPlain, sizeof(unsigned long long) * kNodes, cudaMemcpyDeviceToHost));
    if (rep < 2) std::printf("replay %d: %llu %llu ... %llu\n", rep, r[0], r[1], r[kNodes - 1]);
    all.insert(all.end(), r.begin(), r.end());
  }
  std::set<unsigned long long> u(all.begin(), all.end());
  int bad = 0;
  for (unsigned long long v : all) bad += v >= ~1ull;
  std::printf("gridid: %zu launches, %zu distinct values, %d inconsistent within a grid -> %s\n", all.size(), u.size(), bad,
              (u.size() == all.size() && bad == 0) ? "UNIQUE PER LAUNCH" : "NOT UNIQUE");
  return 0;
}
