"""Tests of the Python binding that run on the CPU (plain asserts, no pytest needed).

The descriptors round-trip, presets and explain work, the tensor checks give clear errors, and the
float64 CPU reference called through the binding equals a NumPy implementation of the layer written
here from the documented semantics (fusedmoe/router.h, activation.h): that checks the layouts the
binding passes on (x [T, K], logits [T, E], w1 [E, 2N, K] gate rows then up rows, w2 [E, K, N]).
"""
import sys

import numpy as np

import fusedmoe as fm

passed = 0


def case(fn):
    global passed
    fn()
    passed += 1
    return fn


def raises(exc, fn, text=""):
    try:
        fn()
    except exc as e:  # noqa: PERF203
        assert text in str(e), f"'{text}' not in '{e}'"
        return str(e)
    raise AssertionError(f"{exc.__name__} not raised")


@case
def build_and_presets():
    info = fm.build_info()
    assert info["version"] == fm.version()
    assert "dsv3-tp8" in fm.presets()
    text = fm.explain("dsv3-tp8", 16)
    assert "E=256" in text and "groups=8/4" in text, text
    raises(ValueError, lambda: fm.explain("no-such-model", 1))
    raises(ValueError, lambda: fm.preset("no-such-model"), "unknown preset")


@case
def descriptors():
    p = fm.preset("dsv3-tp8")
    assert p.num_experts == 256 and p.router.top_k == 8 and p.top_k() == 8
    assert p.router.kind == fm.RouterKind.BiasedTopK and p.router.use_correction_bias
    assert p.quant.weight.format == fm.WeightFormat.FP8E4M3
    assert p.quant.weight.granularity == fm.ScaleGranularity.Block
    p.router.top_k = 4  # nested fields are references into the problem
    assert p.top_k() == 4
    assert fm.preset("dsv3-tp8").top_k() == 8  # presets are copies
    p.max_tokens = 64
    assert fm.workspace_size(p) > 0
    p.num_experts = 257  # 8 groups do not divide 257
    raises(ValueError, lambda: fm.validate(p))
    q = fm.Problem()
    q.num_experts, q.hidden, q.intermediate = 8, 64, 32
    q.router = fm.RouterConfig.softmax_topk(2, True)
    q.quant = fm.QuantScheme.bf16()
    q.activation = fm.Activation.silu()
    q.max_tokens = 16
    fm.validate(q)
    assert "E=8" in repr(q), repr(q)
    o = fm.ForwardOptions()
    o.tiles = fm.TileFamily.SwapAB
    o.tokens_tile = 16
    assert "swap" in fm.explain(q, o).lower()
    # the routing hint (MoeProblem::expected_local_slots): explained, and refused outside [0, top_k]
    e = fm.preset("dsv3-ep8")
    e.num_tokens = e.max_tokens = 64
    assert e.expected_local_slots == 0.0
    e.expected_local_slots = 8.0
    text = fm.explain(e)
    assert "local_slots=8" in text, text
    # (the tile line only where the kernels are built: a CPU-only wheel chooses no backend)
    assert "\ntiles: " not in text or "T*hint/local = 16" in text, text
    e.expected_local_slots = 9.0
    raises(ValueError, lambda: fm.validate(e), "expected_local_slots")


def tiny_problem(act=fm.DType.Float16):
    p = fm.Problem()
    p.num_experts, p.hidden, p.intermediate = 8, 64, 32
    p.router = fm.RouterConfig.softmax_topk(2, False)
    p.quant = fm.QuantScheme.fp16() if act == fm.DType.Float16 else fm.QuantScheme.bf16()
    p.act_dtype = act
    p.activation = fm.Activation.silu()
    p.max_tokens = 16
    return p


def numpy_layer(x, logits, w1, w2, k, n):
    """softmax top-k (ties to the lower expert), silu(gate) * up, weighted sum; float64."""
    z = logits.astype(np.float64)
    prob = np.exp(z - z.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    ids = np.argsort(-prob, axis=1, kind="stable")[:, :k]
    out = np.zeros((x.shape[0], w2.shape[1]))
    for t in range(x.shape[0]):
        for j in range(k):
            e = ids[t, j]
            g = w1[e, :n] @ x[t]
            u = w1[e, n:] @ x[t]
            h = g / (1.0 + np.exp(-g)) * u
            out[t] += prob[t, e] * (w2[e] @ h)
    return out, ids


def bf16_bits(a):
    b = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def inputs(p, tokens, rng):
    e, k_, n = p.num_experts, p.hidden, p.intermediate
    x = rng.standard_normal((tokens, k_)).astype(np.float32)
    w1 = (rng.standard_normal((e, 2 * n, k_)) / np.sqrt(k_)).astype(np.float32)
    w2 = (rng.standard_normal((e, k_, n)) / np.sqrt(n)).astype(np.float32)
    logits = rng.standard_normal((tokens, e)).astype(np.float32)
    return x, w1, w2, logits


@case
def reference_matches_numpy_fp16():
    rng = np.random.default_rng()
    p = tiny_problem()
    for tokens in (1, 3, 16):
        x, w1, w2, logits = inputs(p, tokens, rng)
        x, w1, w2 = x.astype(np.float16), w1.astype(np.float16), w2.astype(np.float16)
        r = fm.reference_forward(p, x=x, router_logits=logits, w1=w1, w2=w2)
        want, ids = numpy_layer(x.astype(np.float64), logits, w1.astype(np.float64), w2.astype(np.float64), 2, 32)
        assert r["out"].shape == (tokens, 64) and r["out"].dtype == np.float64
        assert (r["topk_ids"] == ids).all(), (r["topk_ids"], ids)
        # routing weights are float32 (as the GPU computes them): relative 1e-6
        err = np.abs(r["out"] - want).max() / np.abs(want).max()
        assert err < 1e-5, err


@case
def reference_matches_numpy_bf16_bits():
    rng = np.random.default_rng()
    p = tiny_problem(fm.DType.BFloat16)
    x, w1, w2, logits = inputs(p, 5, rng)
    xb, w1b, w2b = bf16_bits(x), bf16_bits(w1), bf16_bits(w2)
    r = fm.reference_forward(p, x=xb, router_logits=logits, w1=w1b, w2=w2b)
    want, _ = numpy_layer(bf16_value(xb), logits, bf16_value(w1b), bf16_value(w2b), 2, 32)
    err = np.abs(r["out"] - want).max() / np.abs(want).max()
    assert err < 1e-5, err


@case
def row_strided_x():
    rng = np.random.default_rng()
    p = tiny_problem()
    x, w1, w2, logits = inputs(p, 4, rng)
    w1, w2 = w1.astype(np.float16), w2.astype(np.float16)
    wide = np.zeros((4, 96), np.float16)
    wide[:, :64] = x
    a = fm.reference_forward(p, x=wide[:, :64], router_logits=logits, w1=w1, w2=w2)["out"]
    b = fm.reference_forward(p, x=x.astype(np.float16), router_logits=logits, w1=w1, w2=w2)["out"]
    assert np.array_equal(a, b)


@case
def zero_tokens():
    rng = np.random.default_rng()
    p = tiny_problem()
    _, w1, w2, _ = inputs(p, 1, rng)
    r = fm.reference_forward(p, x=np.zeros((0, 64), np.float16), router_logits=np.zeros((0, 8), np.float32),
                             w1=w1.astype(np.float16), w2=w2.astype(np.float16))
    assert r["out"].shape == (0, 64) and r["topk_ids"].shape == (0, 2)


@case
def clear_errors():
    rng = np.random.default_rng()
    p = tiny_problem()
    x, w1, w2, logits = inputs(p, 4, rng)
    x, w1, w2 = x.astype(np.float16), w1.astype(np.float16), w2.astype(np.float16)
    ok = dict(x=x, router_logits=logits, w1=w1, w2=w2)
    ref = fm.reference_forward
    raises(ValueError, lambda: ref(p, **{**ok, "w1": w1[:, :10]}), "w1: shape [8, 10, 64], expected [8, 64, 64]")
    raises(ValueError, lambda: ref(p, **{**ok, "w2": w2.astype(np.float32)}), "w2: dtype float32, expected f16")
    raises(ValueError, lambda: ref(p, **{**ok, "router_logits": logits[:, :7]}), "router_logits: shape")
    raises(ValueError, lambda: ref(p, **{**ok, "x": np.asfortranarray(x)}), "contiguous")
    raises(ValueError, lambda: ref(p, **{**ok, "x": np.zeros((17, 64), np.float16)}), "max_tokens")
    raises(ValueError, lambda: ref(p, **{k: v for k, v in ok.items() if k != "x"}), "x: required")
    raises(TypeError, lambda: ref(p, **ok, wl=w1), "unknown tensor 'wl'")
    raises(TypeError, lambda: ref(p, **ok, out=x), "not an input of the CPU reference")
    raises(TypeError, lambda: ref(p, **{**ok, "w1": "weights"}), "w1: expected an array")
    raises(ValueError, lambda: ref(p, **{**ok, "x": np.float16(1.0)}), "x: shape [], expected [0, 64]")
    # required tensors missing: the C++ validate() says which
    raises(ValueError, lambda: ref(p, x=x, router_logits=logits, w1=w1), "w2")
    # precomputed ids outside [0, E) are reported, never used
    q = tiny_problem()
    q.router = fm.RouterConfig.precomputed(2)
    ids = np.array([[0, 9]] * 4, np.int32)
    raises(ValueError, lambda: ref(q, x=x, w1=w1, w2=w2, topk_ids=ids, topk_weights=np.ones((4, 2), np.float32)))
    # forward() needs device arrays (and, here, a device)
    ws = np.zeros(1 << 20, np.uint8)
    raises((RuntimeError, ValueError), lambda: fm.forward(p, ws, **ok, out=np.zeros_like(x)))
    raises((RuntimeError, ValueError), lambda: fm.dispatch(p, ws, **ok))
    raises(TypeError, lambda: fm.combine(None, x, x))


def e4m3_value(b):
    b = b.astype(np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp, man = (b >> 3) & 0xF, b & 0x7
    val = np.where(exp == 0, man / 8.0 * 2.0 ** -6, (1 + man / 8.0) * 2.0 ** (exp - 7))
    return sign * val


@case
def rope_quant_reference():
    """DeepSeek-V4's inverse RoPE + FP8 quantisation through the binding, against NumPy float32 math:
    pass-through dims, the rotation of the last 64 dims, power-of-two scales per 128 dims with
    amax / scale in (224, 448], the e4m3 bytes within half an e4m3 step; the group-major layout."""
    rng = np.random.default_rng()
    p = fm.RopeQuantProblem()
    p.num_groups, p.heads_per_group, p.max_pos = 2, 2, 50
    t = 5
    o32 = rng.standard_normal((t, 4, 512)).astype(np.float32) * 3
    o = bf16_bits(o32)
    pos = rng.integers(0, 50, t).astype(np.int64)
    cache = rng.standard_normal((50, 64)).astype(np.float32)
    r = fm.reference_inv_rope_fp8_quant(p, o, pos, cache)
    q, sc = r["out_fp8"], r["out_scales"]
    assert q.shape == (2, t, 1024) and sc.shape == (2, 8, 8), (q.shape, sc.shape)
    x = bf16_value(o).astype(np.float32)
    for tok in range(t):
        c, s = cache[pos[tok], :32], cache[pos[tok], 32:]
        for h in range(4):
            y = x[tok, h].copy()
            ev, od = x[tok, h, 448::2], x[tok, h, 449::2]
            y[448::2] = ev * c + od * s
            y[449::2] = od * c - ev * s
            g, j = divmod(h, 2)
            for chunk in range(4):
                v = y[chunk * 128:(chunk + 1) * 128].astype(np.float64)
                scale = sc[g, j * 4 + chunk, tok]
                amax = max(np.abs(v).max(), 1e-10)
                assert np.log2(scale) == np.round(np.log2(scale)), scale
                assert 224 < amax / scale <= 448, (amax, scale)
                got = e4m3_value(q[g, tok, j * 512 + chunk * 128:j * 512 + (chunk + 1) * 128]) * scale
                step = np.maximum(np.abs(v) / scale, 2.0 ** -6) * 2.0 ** -3 * scale  # one e4m3 step
                assert (np.abs(got - v) <= step / 2 + 1e-12).all(), np.abs(got - v).max()
    assert (sc[:, :, t:] == 0).all()  # token padding slots are written as 0
    bad_pos = pos.copy()
    bad_pos[2] = 50  # outside [0, max_pos): that token's outputs are 0
    r2 = fm.reference_inv_rope_fp8_quant(p, o, bad_pos, cache)
    assert (r2["out_fp8"][:, 2] == 0).all() and (r2["out_scales"][:, :, 2] == 0).all()
    raises(ValueError, lambda: fm.reference_inv_rope_fp8_quant(p, np.ascontiguousarray(o[:, :3]), pos, cache), "o: 3 heads")
    raises(ValueError, lambda: fm.reference_inv_rope_fp8_quant(p, o, pos[:4], cache), "positions: shape")


print(f"python binding: {passed} passed, 0 failed")
sys.exit(0)
