#!/usr/bin/env python3
"""The clock a training step's kernel mix sustains under the power limit, against back-to-back
GEMMs: one Llama 3 8B-sized block (8192 tokens) forward and backward, eager, from idle for 25 s,
with the SM clock and power sampled every 20 ms and each GEMM's rate read off a profile taken at
the start (near the top clock) and at the end (power-capped).

Writes <out>/mix.json. Usage: measure_mix.py OUT
"""
import json
import os
import sys
import time

import torch

from measure_gpu import Sampler
from measure_host import Block, time_by_class

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = torch.device("cuda")


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def kernel_rates(step, shapes):
    """Per kernel class: total time in one profiled step, and the GEMMs' TFLOP/s."""
    by = time_by_class(step)
    out = {k: round(v, 1) for k, v in by.items()}
    if by.get("gemm"):
        out["gemm_tflops"] = round(shapes["gemm_flops"] / (by["gemm"] * 1e-6) / 1e12, 1)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    sampler = Sampler()
    sampler.start()
    h, ffn, heads, seq = 4096, 14336, 32, 8192
    blk = Block(h, ffn, heads).to(DEV, torch.bfloat16)
    inp = torch.randn(1, seq, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    # forward GEMMs (qkv, o, up, down) and their two backward GEMMs each
    gemm_flops = 3 * 2 * seq * h * (3 * h + h + 2 * ffn) + 3 * 2 * seq * ffn * h

    def step():
        blk(inp).sum().backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    sampler.label = "idle"
    time.sleep(6.0)
    sampler.label = "mix"
    result = {"block": {"hidden": h, "ffn": ffn, "heads": heads, "tokens": seq},
              "gemm_flops_per_step": gemm_flops}
    result["start_profile"] = kernel_rates(step, {"gemm_flops": gemm_flops})
    t0 = sampler.now()
    steps = []
    while sampler.now() - t0 < 25.0:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(5):
            step()
        e.record()
        e.synchronize()
        steps.append((round(sampler.now() - t0, 3), round(s.elapsed_time(e) / 5, 3)))
    result["end_profile"] = kernel_rates(step, {"gemm_flops": gemm_flops})
    t1 = sampler.now()
    windows = []
    for k in range(0, 25):
        w = sampler.window(t0 + k, t0 + k + 1)
        ms = [m for t, m in steps if k <= t < k + 1]
        if ms:
            windows.append({"second": k, "step_ms": round(sum(ms) / len(ms), 2), **w})
    result["windows_1s"] = windows
    result["first_steps_ms"] = [m for _, m in steps[:10]]
    result["last_5s"] = sampler.window(t1 - 5, t1)
    log(json.dumps({k: v for k, v in result.items() if k != "windows_1s"}))
    for w in windows[::3]:
        log(w)
    sampler.stop_flag = True
    with open(os.path.join(OUT, "mix.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
