// Session 29: latency (SM cycles) of one warp's dependent chains of warp-wide operations on the
// H200, for the fused front's cost model: REDUX (__reduce_max_sync), VOTE (__ballot_sync), SHFL
// (__shfl_xor_sync), an ISETP+SEL pair, and a REDUX.MAX + REDUX.MIN round against a REDUX.MAX +
// ballot + ffs round. Each chain: 256 links in a loop (warm instruction cache), then the same code
// cold (first launch, first pass). Build: nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o latency_probe latency_probe.cu
#include <cuda_runtime.h>

#include <cstdio>

constexpr int kLinks = 256;

template <int kOp>
__device__ __forceinline__ unsigned link(unsigned x, int lane) {
  if constexpr (kOp == 0) return __reduce_max_sync(0xffffffffu, x + lane) - lane;   // REDUX
  if constexpr (kOp == 1) return __ballot_sync(0xffffffffu, (x >> (lane & 7)) & 1u) ^ x;  // VOTE
  if constexpr (kOp == 2) return __shfl_xor_sync(0xffffffffu, x, 1) + 1u;            // SHFL
  if constexpr (kOp == 3) return (x + lane > 5u) ? x * 3u : x + 7u;                   // ALU
  if constexpr (kOp == 4) {  // argmax round, two reductions
    const unsigned m = __reduce_max_sync(0xffffffffu, x);
    const unsigned w = __reduce_min_sync(0xffffffffu, x == m ? static_cast<unsigned>(lane) : 0xffffffffu);
    return x ^ (w == static_cast<unsigned>(lane) ? 0x80000000u : 0u) ^ 1u;
  }
  if constexpr (kOp == 5) {  // argmax round, one reduction + ballot + ffs
    const unsigned m = __reduce_max_sync(0xffffffffu, x);
    const unsigned t = __ballot_sync(0xffffffffu, x == m);
    return x ^ ((__ffs(static_cast<int>(t)) - 1) == lane ? 0x80000000u : 0u) ^ 1u;
  }
  return x;
}

template <int kOp>
__global__ void chain(unsigned* out, long long* cycles, int n) {
  const int lane = threadIdx.x & 31;
  unsigned x = static_cast<unsigned>(lane * 2654435761u);
  const long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < n; ++i) x = link<kOp>(x, lane);
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

// The same links unrolled (straight-line code, executed once: cold instruction fetch).
template <int kOp>
__global__ void chain_unrolled(unsigned* out, long long* cycles) {
  const int lane = threadIdx.x & 31;
  unsigned x = static_cast<unsigned>(lane * 2654435761u);
  const long long t0 = clock64();
#pragma unroll
  for (int i = 0; i < 64; ++i) x = link<kOp>(x, lane);
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) cycles[0] = t1 - t0;
}

template <int kOp>
void run(const char* name, unsigned* d, long long* c) {
  long long h = 0;
  chain<kOp><<<1, 32>>>(d, c, kLinks);
  cudaDeviceSynchronize();
  chain<kOp><<<1, 32>>>(d, c, kLinks);
  cudaMemcpy(&h, c, 8, cudaMemcpyDeviceToHost);
  const double loop = static_cast<double>(h) / kLinks;
  chain_unrolled<kOp><<<1, 32>>>(d, c);
  cudaMemcpy(&h, c, 8, cudaMemcpyDeviceToHost);
  const double cold = static_cast<double>(h) / 64;
  chain_unrolled<kOp><<<1, 32>>>(d, c);
  cudaMemcpy(&h, c, 8, cudaMemcpyDeviceToHost);
  std::printf("%-34s loop %6.1f cycles/link | unrolled x64: first launch %6.1f, second %6.1f\n", name, loop, cold,
              static_cast<double>(h) / 64);
}

int main() {
  unsigned* d;
  long long* c;
  cudaMalloc(&d, 32 * 4);
  cudaMalloc(&c, 8);
  run<0>("REDUX.MAX chain", d, c);
  run<1>("VOTE.ANY (ballot) chain", d, c);
  run<2>("SHFL.BFLY chain", d, c);
  run<3>("ISETP+IMAD/SEL chain", d, c);
  run<4>("argmax round: REDUX.MAX + REDUX.MIN", d, c);
  run<5>("argmax round: REDUX.MAX + ballot/ffs", d, c);
  const cudaError_t e = cudaGetLastError();
  std::printf("%s\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e));
  return 0;
}
