# Memory ceilings for the permute at 16384 tokens of DeepSeek-V3 (K 7168, k 8): device-to-device
# copy, write-only fill, read-only sum, and a row scatter of the same shape, timed with CUDA
# events (median of 20 after 3 warm-ups). Our own script, torch on the device.
import torch, sys
T, K, k = 16384, 7168, 8
dev = "cuda"
def t(fn, n=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in ev:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in ev)
    return ms[n // 2] * 1e3
src = torch.empty(1180 * 2**20, dtype=torch.uint8, device=dev)
dst = torch.empty_like(src)
us = t(lambda: dst.copy_(src)); print(f"d2d copy 1.18 GB (r+w {2*src.numel()/1e9:.2f} GB): {us:.1f} us, {2*src.numel()/us/1e3:.0f} GB/s")
w = torch.empty(T * k * K, dtype=torch.uint8, device=dev)
us = t(lambda: w.fill_(7)); print(f"write-only fill {w.numel()/1e9:.3f} GB: {us:.1f} us, {w.numel()/us/1e3:.0f} GB/s")
x = torch.randn(T, K, dtype=torch.bfloat16, device=dev)
us = t(lambda: x.view(torch.int16).sum(dtype=torch.int32)); print(f"read-only sum {x.numel()*2/1e9:.3f} GB: {us:.1f} us, {x.numel()*2/us/1e3:.0f} GB/s")
xq = torch.randint(0, 255, (T, K), dtype=torch.uint8, device=dev)
idx = torch.randperm(T * k, device=dev)
out = torch.empty(T * k, K, dtype=torch.uint8, device=dev)
src_rows = xq.repeat_interleave(k, dim=0)  # [T*k, K] (not timed)
us = t(lambda: out.index_copy_(0, idx, src_rows)); print(f"index_copy_ rows {T*k}x{K} u8 (r+w {2*out.numel()/1e9:.2f} GB): {us:.1f} us, {2*out.numel()/us/1e3:.0f} GB/s")
