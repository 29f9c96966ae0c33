"""A PyTorch-facing wrapper of fusedmoe.forward(): one object per MoE layer that owns its
workspace and the packed copies of its weights, and runs on torch's current stream.

    import fusedmoe as fm
    from fusedmoe.torch_layer import MoELayer
    layer = MoELayer(fm.preset("qwen235-tp8"), w1=w1, w2=w2, max_tokens=4096)
    out = layer(x, router_logits=logits)        # [T, K], T <= max_tokens

Everything is allocated in the constructor; a call allocates only `out` when none is given (pass
`out=` for CUDA-graph capture, or capture with a preallocated output). The workspace is one per
layer: calls on several streams at once must not share a layer (torch's allocator also ties the
workspace to the constructor's stream). Tensors are checked by the
binding (dtype, shape, device) and errors raise ValueError / TypeError / NotImplementedError.
"""
import copy

import torch

from . import _fusedmoe as fm

# MoeTensors fields a layer keeps (its weights and fixed routing inputs); the rest come per call.
_LAYER_TENSORS = ("w1", "w2", "w1_scale", "w2_scale", "b1", "b2", "act_scale", "act2_scale", "correction_bias",
                  "expert_map", "hash_table", "w1_gate_up_blocks")


class MoELayer:
    def __init__(self, problem, *, max_tokens, pack=True, options=None, device=None, **tensors):
        """problem: fusedmoe.Problem (copied; max_tokens is set here). tensors: the layer's weights
        and fixed inputs by MoeTensors field name (w1, w2, w1_scale, w2_scale, b1, b2, correction_bias,
        expert_map, ...), on one CUDA device. pack: also keep the weights pre-tiled for the decode
        GEMMs (pack_weights; BF16 and FP8 e4m3), which costs their size again in device memory."""
        unknown = set(tensors) - set(_LAYER_TENSORS)
        if unknown:
            raise TypeError(f"MoELayer: not a layer tensor: {sorted(unknown)} (per-call inputs go to __call__)")
        if "w1" not in tensors or "w2" not in tensors:
            raise TypeError("MoELayer: w1 and w2 are required")
        self.problem = copy.copy(problem)
        self.problem.max_tokens = int(max_tokens)
        self.problem.num_tokens = 0
        fm.validate(self.problem)
        self.device = torch.device(device) if device is not None else tensors["w1"].device
        self.options = options
        self.tensors = {k: (v.detach() if isinstance(v, torch.Tensor) else v) for k, v in tensors.items()}
        with torch.cuda.device(self.device):
            self.workspace = torch.empty(fm.workspace_size(self.problem), dtype=torch.uint8, device=self.device)
            fmt = self.problem.quant.weight.format
            if pack and fmt in (fm.WeightFormat.BF16, fm.WeightFormat.FP8E4M3):
                stream = torch.cuda.current_stream(self.device).cuda_stream
                for g in (1, 2):
                    buf = torch.empty(fm.packed_weights_size(self.problem, g), dtype=torch.uint8, device=self.device)
                    fm.pack_weights(self.problem, g, self.tensors[f"w{g}"], buf, stream=stream)
                    self.tensors[f"w{g}_packed"] = buf
            # a one-off at load time: later calls may run on any stream (or be captured)
            torch.cuda.current_stream(self.device).synchronize()

    def __call__(self, x, *, out=None, **inputs):
        """x [T, K] (T <= max_tokens) and the per-call routing inputs (router_logits, or topk_ids +
        topk_weights, or token_ids; num_tokens_device, out_topk_ids, out_topk_weights). Returns out."""
        if out is None:
            out = torch.empty(x.shape[0], self.problem.hidden, dtype=x.dtype, device=x.device)
        with torch.cuda.device(self.device):
            fm.forward(self.problem, self.workspace, stream=torch.cuda.current_stream(self.device).cuda_stream,
                       options=self.options, x=x, out=out, **self.tensors, **inputs)
        return out

    def explain(self, tokens=None):
        """The plan forward() runs for `tokens` (default max_tokens), and why."""
        p = copy.copy(self.problem)
        p.num_tokens = int(tokens if tokens is not None else p.max_tokens)
        return fm.explain(p, self.options)

    def check_device_errors(self):
        """Input errors the device found in the last call (ids outside [0, E), ...); synchronises."""
        with torch.cuda.device(self.device):
            fm.check_device_errors(self.problem, self.workspace, torch.cuda.current_stream(self.device).cuda_stream)
