// fusedmoe/types.h — element types and the stream handle, free of CUDA headers.
#pragma once
#include <cstddef>
#include <cstdint>

// Same type as the CUDA runtime's cudaStream_t (a pointer to the opaque CUstream_st), declared
// here so that the public headers do not need cuda_runtime.h.
struct CUstream_st;

namespace fusedmoe {

using Stream = CUstream_st*;

enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kBFloat16,
  kFloat16,
  kFloat8E4M3,  // OCP e4m3fn: max 448, no infinity, NaN = S.1111.111
  kUE8M0,       // unsigned power-of-two scale: value = 2^(bits - 127), 0xFF = NaN
  kInt32,
  kInt64,
  kPackedInt4,  // two 4-bit values per byte (reserved for W4A16 / W4A8)
  kPackedFP4,   // two e2m1 values per byte (reserved for MXFP4)
};

const char* to_string(DType t);
// Bytes per element; 4-bit packed types report 1 (bytes per *pair*), see element_bits().
size_t dtype_bytes(DType t);
int element_bits(DType t);

}  // namespace fusedmoe
