// hd.h — FM_HD: a function compiled for both host and device by nvcc, or a plain inline function
// for a host-only compiler (the CPU reference, the CPU tests, the CPU-only configuration).
#pragma once

#if defined(__CUDACC__)
#define FM_HD __host__ __device__ __forceinline__
#else
#define FM_HD inline
#endif
