#!/usr/bin/env python3
"""FP8 GEMMs inside a training step's kernel mix, against the same mix in BF16: the twelve GEMMs
of a Llama 3 8B layer's forward and backward (8192 tokens; FP8 as Transformer Engine runs them:
E4M3 activations and weights, E5M2 gradients, per-tensor scales, each input cast before its GEMM),
between the layer's causal attention forward and backward (cuDNN, BF16) and its element-wise
kernels, back to back for 20 s per precision, the SM clock sampled every 20 ms, each kernel timed
by a profile of the last step.

Writes <out>/mix_fp8.json. Usage: measure_mix_fp8.py OUT
"""
import json
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from measure_gpu import Sampler
from measure_host import time_by_class

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = torch.device("cuda")
T, H, FFN, HEADS, KV = 8192, 4096, 14336, 32, 8
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def layer_shapes():
    """(m, n, k, role) of the forward GEMMs (x[m,k] W[n,k]^T) and their input and weight
    gradients, Llama 3 8B with grouped KV heads."""
    fwd = [(T, H + 2 * KV * 128, H), (T, H, H), (T, 2 * FFN, H), (T, H, FFN)]
    out = []
    for m, n, k in fwd:
        out += [(m, n, k, "fprop"), (m, k, n, "dgrad"), (n, k, m, "wgrad")]
    return out


def make_gemms(fp8):
    calls = []
    one = torch.tensor(1.0, device=DEV)
    for m, n, k, role in layer_shapes():
        a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
        if not fp8:
            bt = b.t()
            calls.append(lambda a=a, bt=bt: torch.matmul(a, bt))
            continue
        a_type = E5M2 if role in ("dgrad", "wgrad") else E4M3
        b_type = E4M3 if role != "wgrad" else E4M3

        def call(a=a, b=b, a_type=a_type, b_type=b_type):
            qa = a.to(a_type)  # the cast Transformer Engine runs before each GEMM input
            qb = b.to(b_type)
            return torch._scaled_mm(qa, qb.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)
        calls.append(call)
    return calls


def make_step(fp8):
    gemms = make_gemms(fp8)
    q = torch.randn(1, HEADS, T, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, HEADS, T, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, HEADS, T, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(T, FFN, device=DEV, dtype=torch.bfloat16)
    u = torch.randn(T, FFN, device=DEV, dtype=torch.bfloat16)
    x = torch.randn(T, H, device=DEV, dtype=torch.bfloat16)
    w = torch.ones(H, device=DEV, dtype=torch.bfloat16)

    def step():
        for call in gemms[0:3:1] + gemms[3:6:1]:  # qkv and o, forward and backward interleaved
            call()
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(o, (q, k, v), o)
        F.rms_norm(x, (H,), w, 1e-5)
        F.rms_norm(x, (H,), w, 1e-5)
        for call in gemms[6:]:
            call()
        F.silu(g) * u  # SwiGLU forward
        F.silu(g) * u * g  # and roughly its backward's traffic
        x + x
    return step


def main():
    os.makedirs(OUT, exist_ok=True)
    sampler = Sampler()
    sampler.start()
    flops = sum(2.0 * m * n * k for m, n, k, _ in layer_shapes())
    result = {"gemm_flops_per_step": flops, "shapes": layer_shapes()}
    for label, fp8 in (("bf16", False), ("fp8", True)):
        try:
            step = make_step(fp8)
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            sampler.label = "idle-" + label
            time.sleep(5.0)
            sampler.label = "mix-" + label
            t0 = sampler.now()
            n = 0
            while sampler.now() - t0 < 20.0:
                for _ in range(5):
                    step()
                torch.cuda.synchronize()
                n += 5
            t1 = sampler.now()
            by = time_by_class(step)
            r = {"steps": n, "step_ms": round((t1 - t0) / n * 1e3, 3),
                 "kernel_us": {k: round(v, 1) for k, v in by.items()},
                 "last_5s": sampler.window(t1 - 5, t1)}
            if by.get("gemm"):
                r["gemm_tflops"] = round(flops / (by["gemm"] * 1e-6) / 1e12, 1)
            result[label] = r
            log(label, r)
        except Exception:
            result[label] = {"error": traceback.format_exc()[-1500:]}
            log(result[label]["error"])
        torch.cuda.empty_cache()
    sampler.stop_flag = True
    with open(os.path.join(OUT, "mix_fp8.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
