// writebw.cu — how fast can the H200 write? Fill and permute-shaped patterns with different store
// kinds (plain st.global.v4, streaming .cs, L2 evict-first hint, TMA bulk store from shared
// memory, cudaMemset), a D2D copy and a plain streaming read for reference. Standalone:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a writebw.cu -o writebw && ./writebw
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <random>
#include <algorithm>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)

enum Store { kPlain = 0, kCs = 1, kEvictFirst = 2, kNoAlloc = 3 };

__device__ __forceinline__ void st16(uint4* p, uint4 v, int mode, uint64_t pol) {
  if (mode == kPlain) { *p = v; }
  else if (mode == kCs) { __stcs(p, v); }
  else if (mode == kEvictFirst) {
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
  } else {
    asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  }
}
__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}

__global__ void fill_kernel(uint4* dst, int64_t n, int mode) {
  const uint64_t pol = evict_first_policy();
  const uint4 v = make_uint4(threadIdx.x, 1, 2, 3);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) st16(dst + i, v, mode, pol);
}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* dst, int64_t n, int mode) {
  const uint64_t pol = evict_first_policy();
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) st16(dst + i, __ldcs(src + i), mode, pol);
}

__global__ void read_kernel(const uint4* __restrict__ src, int64_t n, unsigned* sink) {
  unsigned acc = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) { uint4 v = __ldcs(src + i); acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  if (acc == 0x12345678u) *sink = acc;
}

// Bulk fill: each block owns a 16 KB shared buffer and issues bulk stores of it.
__global__ void fill_bulk_kernel(char* dst, int64_t bytes, int chunk) {
  extern __shared__ __align__(128) unsigned char sm[];
  for (int i = threadIdx.x; i < chunk / 16; i += blockDim.x) reinterpret_cast<uint4*>(sm)[i] = make_uint4(i, 1, 2, 3);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x != 0) return;
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(sm));
  int inflight = 0;
  for (int64_t off = blockIdx.x * (int64_t)chunk; off < bytes; off += (int64_t)gridDim.x * chunk) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst + off), "r"(s), "r"(chunk) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (++inflight > 8) asm volatile("cp.async.bulk.wait_group.read 8;" ::: "memory");
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Permute-shaped: src [T][row] -> dst rows perm[t*k + s] for s < k. A warp per source row,
// registers hold the row (row bytes / 512 uint4 per lane), k stores of it.
template <int kU>  // uint4 per lane
__global__ void permute_warp_kernel(const uint4* __restrict__ src, uint4* dst, const int* __restrict__ perm, int T, int k, int mode) {
  const uint64_t pol = evict_first_policy();
  const int row_u4 = kU * 32;
  const int warps = gridDim.x * (blockDim.x >> 5);
  const int lane = threadIdx.x & 31;
  for (int t = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); t < T; t += warps) {
    uint4 v[kU];
#pragma unroll
    for (int j = 0; j < kU; ++j) v[j] = __ldcs(src + (int64_t)t * row_u4 + lane + 32 * j);
    for (int s = 0; s < k; ++s) {
      const int d = __ldg(perm + (int64_t)t * k + s);
      uint4* o = dst + (int64_t)d * row_u4;
#pragma unroll
      for (int j = 0; j < kU; ++j) st16(o + lane + 32 * j, v[j], mode, pol);
    }
  }
}

// Permute-shaped with bulk stores: a block loads a source row into shared memory (plain loads,
// as a quantiser would write its output), then one thread issues k bulk stores of the row.
// Double-buffered: two rows per block in flight.
__global__ void permute_bulk_kernel(const uint4* __restrict__ src, char* dst, const int* __restrict__ perm, int T, int k, int row_bytes) {
  extern __shared__ __align__(128) unsigned char sm[];
  const int row_u4 = row_bytes / 16;
  int buf = 0;
  for (int t = blockIdx.x; t < T; t += gridDim.x, buf ^= 1) {
    unsigned char* b = sm + buf * row_bytes;
    if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");  // buffer free
    __syncthreads();
    for (int i = threadIdx.x; i < row_u4; i += blockDim.x) reinterpret_cast<uint4*>(b)[i] = __ldcs(src + (int64_t)t * row_u4 + i);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(b));
      for (int q = 0; q < k; ++q) {
        const int d = __ldg(perm + (int64_t)t * k + q);
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst + (int64_t)d * row_bytes), "r"(s), "r"(row_bytes) : "memory");
      }
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
  }
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Permute-shaped from a bf16 row (2 x 16 B read per 16 B written, as an FP8 quantiser does).
// kPat 0: lane reads its unit's 32 B as two 16 B loads (.cg: half of each sector unused per
// instruction); 1: the same through L1 (.nc); 2: the two loads lane-contiguous (.cs).
template <int kU, int kPat>
__global__ void permute_bf16_kernel(const uint4* __restrict__ src, uint4* dst, const int* __restrict__ perm, int T, int k) {
  const int row_u4 = kU * 32;  // output uint4 per row; input has 2x
  const int warps = gridDim.x * (blockDim.x >> 5);
  const int lane = threadIdx.x & 31;
  for (int t = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); t < T; t += warps) {
    uint4 v[kU];
    const uint4* s = src + (int64_t)t * 2 * row_u4;
#pragma unroll
    for (int j = 0; j < kU; ++j) {
      const int u = lane + 32 * j;
      uint4 a, b;
      if (kPat == 0) { a = __ldcg(s + 2 * u); b = __ldcg(s + 2 * u + 1); }
      else if (kPat == 1) { a = __ldg(s + 2 * u); b = __ldg(s + 2 * u + 1); }
      else { a = __ldcs(s + u); b = __ldcs(s + u + row_u4); }
      v[j] = make_uint4(a.x ^ b.y, a.y ^ b.x, a.z ^ b.w, a.w ^ b.z);
    }
    for (int q = 0; q < k; ++q) {
      const int d = __ldg(perm + (int64_t)t * k + q);
      uint4* o = dst + (int64_t)d * row_u4;
#pragma unroll
      for (int j = 0; j < kU; ++j) o[lane + 32 * j] = v[j];
    }
  }
}

template <class F>
float time_ms(F f, int reps = 10) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  f(); f();
  CK(cudaEventRecord(a));
  for (int i = 0; i < reps; ++i) f();
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  CK(cudaGetLastError());
  float ms; CK(cudaEventElapsedTime(&ms, a, b));
  return ms / reps;
}

int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int64_t bytes = 1ll << 30;
  char *A, *B; unsigned* sink;
  CK(cudaMalloc(&A, bytes)); CK(cudaMalloc(&B, bytes)); CK(cudaMalloc(&sink, 4));
  CK(cudaMemset(A, 1, bytes)); CK(cudaMemset(B, 1, bytes));
  const int64_t n = bytes / 16;
  const char* names[] = {"plain", "cs", "evict_first", "L1_no_allocate"};
  printf("GiB = 2^30 bytes; GB/s = 1e9 bytes/s\n");
  for (int bps : {2, 4, 8}) {
    printf("--- %d blocks x 512 threads per SM\n", bps);
    for (int m = 0; m < 4; ++m) {
      float ms = time_ms([&] { fill_kernel<<<sms * bps, 512>>>(reinterpret_cast<uint4*>(A), n, m); });
      printf("fill      %-14s 1 GiB write: %8.1f us  %6.0f GB/s\n", names[m], ms * 1e3, bytes / ms / 1e6);
    }
    for (int m = 0; m < 2; ++m) {
      float ms = time_ms([&] { copy_kernel<<<sms * bps, 512>>>(reinterpret_cast<uint4*>(A), reinterpret_cast<uint4*>(B), n, m); });
      printf("copy      %-14s 1 GiB r + 1 GiB w: %8.1f us  %6.0f GB/s (r+w)\n", names[m], ms * 1e3, 2 * bytes / ms / 1e6);
    }
    float ms = time_ms([&] { read_kernel<<<sms * bps, 512>>>(reinterpret_cast<uint4*>(A), n, sink); });
    printf("read      1 GiB: %8.1f us  %6.0f GB/s\n", ms * 1e3, bytes / ms / 1e6);
  }
  {
    float ms = time_ms([&] { CK(cudaMemsetAsync(A, 0, bytes)); });
    printf("cudaMemsetAsync 1 GiB: %8.1f us  %6.0f GB/s\n", ms * 1e3, bytes / ms / 1e6);
    ms = time_ms([&] { CK(cudaMemcpyAsync(B, A, bytes, cudaMemcpyDeviceToDevice)); });
    printf("cudaMemcpyAsync D2D 1 GiB: %8.1f us  %6.0f GB/s (r+w)\n", ms * 1e3, 2 * bytes / ms / 1e6);
  }
  for (int chunk : {4096, 16384, 32768}) {
    CK(cudaFuncSetAttribute(fill_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, chunk));
    for (int bps : {1, 4}) {
      float ms = time_ms([&] { fill_bulk_kernel<<<sms * bps, 128, chunk>>>(A, bytes, chunk); });
      printf("fill bulk chunk %5d, %d blocks/SM: %8.1f us  %6.0f GB/s\n", chunk, bps, ms * 1e3, bytes / ms / 1e6);
    }
  }
  // Permute-shaped: dsv3 at 16384 tokens, k 8, FP8 rows of 7168 B (reads modelled as 7168 B too).
  const int T = 16384, k = 8, row = 7168;
  std::vector<int> perm(static_cast<size_t>(T) * k);
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
  std::mt19937 rng(1);
  std::shuffle(perm.begin(), perm.end(), rng);
  int* dperm; CK(cudaMalloc(&dperm, perm.size() * 4));
  CK(cudaMemcpy(dperm, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
  const double wbytes = double(T) * k * row, rbytes = double(T) * row;
  printf("--- permute-shaped: %d rows of %d B, each written to %d random rows (%.0f MB w, %.0f MB r)\n", T, row, k, wbytes / 1e6, rbytes / 1e6);
  for (int bps : {2, 4, 8}) {
    for (int m = 0; m < 4; ++m) {
      float ms = time_ms([&] { permute_warp_kernel<14><<<sms * bps, 256>>>(reinterpret_cast<uint4*>(A), reinterpret_cast<uint4*>(B), dperm, T, k, m); });
      printf("permute warp %-14s %d x 256 thr/SM: %8.1f us  w %6.0f GB/s  r+w %6.0f GB/s\n", names[m], bps, ms * 1e3, wbytes / ms / 1e6, (wbytes + rbytes) / ms / 1e6);
    }
  }
  CK(cudaFuncSetAttribute(permute_bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 2 * row));
  for (int bps : {2, 4, 8, 12}) {
    float ms = time_ms([&] { permute_bulk_kernel<<<sms * bps, 128, 2 * row>>>(reinterpret_cast<uint4*>(A), B, dperm, T, k, row); });
    printf("permute bulk %d x 128 thr/SM: %8.1f us  w %6.0f GB/s  r+w %6.0f GB/s\n", bps, ms * 1e3, wbytes / ms / 1e6, (wbytes + rbytes) / ms / 1e6);
  }
  // Same, reading bf16 rows (14336 B) as the FP8 permute does.
  {
    const double rb = double(T) * row * 2;
    const char* pats[] = {"2x16B .cg", "2x16B .nc (L1)", "contiguous .cs"};
    for (int bps : {2, 4, 8}) {
      for (int pat = 0; pat < 3; ++pat) {
        auto go = [&] {
          if (pat == 0) permute_bf16_kernel<14, 0><<<sms * bps, 256>>>(reinterpret_cast<uint4*>(A), reinterpret_cast<uint4*>(B), dperm, T, k);
          else if (pat == 1) permute_bf16_kernel<14, 1><<<sms * bps, 256>>>(reinterpret_cast<uint4*>(A), reinterpret_cast<uint4*>(B), dperm, T, k);
          else permute_bf16_kernel<14, 2><<<sms * bps, 256>>>(reinterpret_cast<uint4*>(A), reinterpret_cast<uint4*>(B), dperm, T, k);
        };
        float ms = time_ms(go);
        printf("permute from bf16 %-16s %d x 256 thr/SM: %8.1f us  w %6.0f GB/s  r+w %6.0f GB/s\n", pats[pat], bps, ms * 1e3, wbytes / ms / 1e6, (wbytes + rb) / ms / 1e6);
      }
    }
  }
  // Same destinations in row order (sorted): the effect of scattered destinations.
  std::sort(perm.begin(), perm.end());
  CK(cudaMemcpy(dperm, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
  for (int m = 0; m < 2; ++m) {
    float ms = time_ms([&] { permute_warp_kernel<14><<<sms * 4, 256>>>(reinterpret_cast<uint4*>(A), reinterpret_cast<uint4*>(B), dperm, T, k, m); });
    printf("permute warp %-14s sequential dests: %8.1f us  w %6.0f GB/s\n", names[m], ms * 1e3, wbytes / ms / 1e6);
  }
  printf("done\n");
  return 0;
}
