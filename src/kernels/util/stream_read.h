// A streaming-read kernel: the measured ceiling of the roofline floor (bytes / read bandwidth);
// and a code-sweep kernel for diagnosis.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fusedmoe::kernels {
const char* stream_read_kernel_name();
// Reads `bytes` (multiple of 16) from `buf` with 16-byte loads; writes a checksum to *sink so
// that the loads cannot be removed.
cudaError_t launch_stream_read(const void* buf, size_t bytes, uint32_t* sink, int num_sms, cudaStream_t stream);
// A diagnosis kernel: ~256 KB of straight-line code run on every SM (2 blocks of 4 warps per SM),
// so the next kernel's instructions come cold from L2 / HBM into each SM. ~40 us.
const char* code_sweep_kernel_name();
cudaError_t launch_code_sweep(uint32_t* sink, int num_sms, cudaStream_t stream);
}  // namespace fusedmoe::kernels
