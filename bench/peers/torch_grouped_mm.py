#!/usr/bin/env python3
"""Peer for `fusedmoe bench --suite layer`: a PyTorch MoE layer built on torch._grouped_mm (BF16),
and on torch._scaled_grouped_mm (FP8 e4m3 with row-wise scales) for the FP8 cases whose scheme it
matches: qwen235-tp8-fp8c (per-channel weights, per-token activations, both quantised in the
layer) and qwen235-tp8-fp8t (per-tensor: row-wise scales of one value). Block-FP8 cases have no
matching torch op and are not timed.

Same cases, token counts and method as our layer suite: uniform random top-k (precomputed, so the
peer's time starts after routing while ours includes it), gather rows by expert, grouped GEMM1,
SiLU-gated (GPT-OSS: clamped SwiGLU-OAI with biases), grouped GEMM2, weighted scatter-add; one
CUDA graph of the layer; cold weights: an L2 flush (256 MB read) before every call, its time
measured alone and subtracted; median of repetitions.

    python3 bench/peers/torch_grouped_mm.py --tokens 1,16,256,4096 --json peer.json
Then: fusedmoe bench --suite layer --peer peer.json  (adds the "x peer" column).
"""
import argparse
import json
import statistics

import torch

# name: (E local, N, K, k, activation) — the BF16 layer suite of tools/bench.cpp
CASES = {
    "dsv3-tp8": (256, 256, 7168, 8, "silu"),
    "dsv3-ep8": (32, 2048, 7168, 8, "silu"),  # 32 of 256 experts local: k slots land locally w.p. 1/8
    "dsv4f-tp4": (256, 512, 4096, 6, "clamped10"),
    "qwen235-tp8": (128, 192, 4096, 8, "silu"),
    "qwen235-tp4": (128, 384, 4096, 8, "silu"),
    "qwen30-tp1": (128, 768, 2048, 8, "silu"),
    "mixtral-tp2": (8, 7168, 4096, 2, "silu"),
    "gptoss-tp1": (128, 2880, 2880, 4, "swiglu_oai"),
}
GLOBAL_E = {"dsv3-ep8": 256}
# FP8 cases (row-wise scaled): name -> the BF16 case of their shape
FP8_CASES = {"qwen235-tp8-fp8c": "qwen235-tp8", "qwen235-tp8-fp8t": "qwen235-tp8"}


def act(h, kind, n):
    if kind == "swiglu_oai":  # interleaved gate/up, alpha 1.702, limit 7
        g, u = h[:, 0::2], h[:, 1::2]
        g = g.clamp(max=7.0)
        u = u.clamp(-7.0, 7.0)
        return (u + 1) * g * torch.sigmoid(1.702 * g)
    g, u = h[:, :n], h[:, n:]
    if kind == "clamped10":
        return torch.nn.functional.silu(g.clamp(max=10.0)) * u.clamp(-10.0, 10.0)
    return torch.nn.functional.silu(g) * u


def quant_rows(v):
    """e4m3 rows with one float32 scale each (amax / 448), as the layer's dynamic per-token step."""
    s = v.abs().amax(dim=1).float().clamp(min=1e-12) / 448.0
    return (v.float() / s.unsqueeze(1)).to(torch.float8_e4m3fn), s


def run_case(name, tokens, reps, dev):
    fp8 = name in FP8_CASES
    base = FP8_CASES.get(name, name)
    e_local, n, kdim, k, kind = CASES[base]
    e_global = GLOBAL_E.get(base, e_local)
    gen = torch.Generator(device=dev).manual_seed(1000 + tokens)
    w1 = torch.randn(e_local, 2 * n, kdim, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02
    w2 = torch.randn(e_local, kdim, n, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02
    b1 = torch.zeros(e_local, 2 * n, device=dev, dtype=torch.float32) if kind == "swiglu_oai" else None
    x = torch.randn(tokens, kdim, device=dev, dtype=torch.bfloat16, generator=gen)
    ids = torch.rand(tokens, e_global, device=dev, generator=gen).topk(k, dim=1).indices.to(torch.int32)
    wts = torch.rand(tokens, k, device=dev, generator=gen)
    wts = wts / wts.sum(1, keepdim=True)
    out = torch.empty(tokens, kdim, device=dev, dtype=torch.bfloat16)

    if fp8:  # e4m3 weights [E, rows, K] (K-major) with per-row float32 scales
        w1q, s1 = quant_rows(w1.reshape(-1, kdim))
        w1q, s1 = w1q.view(e_local, 2 * n, kdim), s1.view(e_local, 2 * n)
        w2q, s2 = quant_rows(w2.reshape(-1, n))
        w2q, s2 = w2q.view(e_local, kdim, n), s2.view(e_local, kdim)
        del w1, w2
    ones = torch.ones(tokens * k, device=dev, dtype=torch.int32)
    beyond = torch.full((tokens * k,), e_local, device=dev, dtype=torch.int32)

    # Graph-capturable throughout: no host scalars turned into tensors, no bincount (its size
    # check synchronises), device-side constants made before the capture.
    def layer():
        flat = ids.flatten()
        key = torch.where(flat < e_local, flat, beyond) if e_global != e_local else flat
        order = torch.argsort(key, stable=True)
        counts = torch.zeros(e_local + 1, device=dev, dtype=torch.int32).scatter_add_(0, key.long(), ones)[:e_local]
        offs = torch.cumsum(counts, 0, dtype=torch.int32)  # int32 end offsets, what _grouped_mm takes
        rows = order[: flat.numel()]
        tok = rows // k
        if fp8:  # per-token quantisation of x, gathered with its scales; H quantised per row
            xq, sx = quant_rows(x)
            h = torch._scaled_grouped_mm(xq.index_select(0, tok), w1q.transpose(-2, -1), sx.index_select(0, tok), s1,
                                         offs=offs, out_dtype=torch.bfloat16)
            hq, sh = quant_rows(act(h, kind, n).to(torch.bfloat16))
            y = torch._scaled_grouped_mm(hq, w2q.transpose(-2, -1), sh, s2, offs=offs, out_dtype=torch.bfloat16)
        else:
            xs = x.index_select(0, tok)
            h = torch._grouped_mm(xs, w1.transpose(-2, -1), offs=offs)
            if b1 is not None:
                h = h + b1.repeat_interleave(counts, dim=0, output_size=xs.shape[0]).to(h.dtype)
            a = act(h, kind, n).to(torch.bfloat16)
            y = torch._grouped_mm(a, w2.transpose(-2, -1), offs=offs)
        wsel = wts.flatten().index_select(0, rows).unsqueeze(1)
        valid = key.index_select(0, rows) < e_local
        y = y.float() * wsel * valid.unsqueeze(1)
        out.zero_()
        out.index_add_(0, tok, y.to(torch.bfloat16))

    flush = torch.ones(256 << 20, dtype=torch.uint8, device=dev)

    def flush_l2():
        # Reads 256 MB (> 4x the 60 MB L2); the result is discarded.
        flush.view(torch.int64).sum()

    def graph_time(fn, calls=10):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        times = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3 / calls)
        return statistics.median(times)

    t_flush = graph_time(flush_l2)
    t_both = graph_time(lambda: (flush_l2(), layer()))
    return max(t_both - t_flush, 0.01)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,4,16,64,256,1024,4096,16384")
    ap.add_argument("--cases", default=",".join(list(CASES) + list(FP8_CASES)))
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    dev = torch.device("cuda")
    rows = []
    for name in args.cases.split(","):
        if name not in CASES and name not in FP8_CASES:
            print(f"{name}: no matching torch peer (skipped)")
            continue
        for t in [int(v) for v in args.tokens.split(",")]:
            try:
                us = run_case(name, t, args.reps, dev)
            except Exception as exc:  # report and go on: one failing case must not hide the others
                print(f"{name} T={t}: failed: {exc}")
                continue
            op = "torch._scaled_grouped_mm" if name in FP8_CASES else "torch._grouped_mm"
            rows.append({"case": name, "tokens": t, "us": us, "op": op})
            print(f"{name:16s} {t:7d} {us:10.2f} us  ({op} peer)", flush=True)
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peer": "torch._grouped_mm", "torch": torch.__version__,
                       "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
