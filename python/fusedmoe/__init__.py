"""fusedmoe: fused Mixture-of-Experts kernels for NVIDIA Hopper (thin binding of the C++ API).

    import fusedmoe as fm
    p = fm.preset("qwen235-tp8"); p.max_tokens = 256
    ws = torch.empty(fm.workspace_size(p), dtype=torch.uint8, device="cuda")
    fm.forward(p, ws, x=x, router_logits=logits, w1=w1, w2=w2, out=out,
               stream=torch.cuda.current_stream().cuda_stream)

Tensors are passed by keyword with the names of the C++ MoeTensors fields; see README.md, "Python".
"""
from ._fusedmoe import *  # noqa: F401,F403
