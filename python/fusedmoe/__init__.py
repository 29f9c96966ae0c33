"""fusedmoe: fused Mixture-of-Experts kernels for NVIDIA Hopper (thin binding of the C++ API)."""
from ._fusedmoe import build_info, device_status, explain, presets, version  # noqa: F401
