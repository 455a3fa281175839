#!/usr/bin/env python3
"""Whether eager PyTorch's host cost per kernel depends on the tensors' size: each call is issued
while the GPU is held busy by a long sleep kernel, so the host never waits for the GPU and the
time to issue is the host's alone. Complements measure_host.py (tiny tensors).

Writes <out>/host_sizes.json and <out>/host_profile_<size>.txt. Usage: measure_host_sizes.py OUT
"""
import json
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from measure_host import BLOCK_SIZES, Block

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = torch.device("cuda")
RESULTS = {}


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def hold_gpu(ms):
    """Keeps the GPU busy for about `ms` so that what the host issues next queues behind it."""
    torch.cuda._sleep(int(ms * 1.98e6))  # cycles at the top clock


def issue_us(fn, calls, hold_ms):
    """Host time per call, every call issued while the GPU sleeps (queue never drains)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    hold_gpu(hold_ms)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return {"issue_us": round((t1 - t0) / calls * 1e6, 2), "wall_ms": round((t2 - t0) * 1e3, 2),
            "held_ms": hold_ms, "calls": calls, "gpu_outlasted_host": (t1 - t0) * 1e3 < hold_ms}


def ops_by_size():
    out = {}
    with torch.no_grad():
        for label, (m, h, ffn) in {"tiny": (64, 64, 128), "1b": (2048, 2048, 8192),
                                   "8b": (4096, 4096, 14336)}.items():
            x = torch.randn(m, h, device=DEV, dtype=torch.bfloat16)
            w = torch.randn(2 * ffn, h, device=DEV, dtype=torch.bfloat16)
            g = torch.randn(m, ffn, device=DEV, dtype=torch.bfloat16)
            nw = torch.ones(h, device=DEV, dtype=torch.bfloat16)
            heads = max(1, h // 128)
            q = torch.randn(1, heads, m, min(128, h), device=DEV, dtype=torch.bfloat16)
            row = {}
            for name, fn in {"linear_fc1": lambda: F.linear(x, w), "silu": lambda: F.silu(g),
                             "mul": lambda: g * g, "rms_norm": lambda: F.rms_norm(x, (h,), nw, 1e-5),
                             "sdpa_causal": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)}.items():
                row[name] = issue_us(fn, 100, 400)
            out[label] = row
            log(label, {k: v["issue_us"] for k, v in row.items()})
            del x, w, g, q
    return out


def blocks_by_size():
    out = {}
    for label, (h, ffn, heads, seq) in BLOCK_SIZES.items():
        blk = Block(h, ffn, heads).to(DEV, torch.bfloat16)
        inp = torch.randn(1, seq, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)

        def step():
            blk(inp).sum().backward()

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        r = issue_us(step, 5, 600)
        out[label] = r
        log(label, r)
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                hold_gpu(300)
                step()
                torch.cuda.synchronize()
            with open(os.path.join(OUT, "host_profile_%s.txt" % label.split("-")[0]), "w") as f:
                f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
        except Exception:
            out[label + "_profile_error"] = traceback.format_exc()[-800:]
        del blk, inp
        torch.cuda.empty_cache()
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, fn in (("ops_by_size", ops_by_size), ("blocks_by_size", blocks_by_size)):
        try:
            RESULTS[name] = fn()
        except Exception:
            RESULTS[name] = {"error": traceback.format_exc()[-2000:]}
            log(RESULTS[name]["error"])
        with open(os.path.join(OUT, "host_sizes.json"), "w") as f:
            json.dump(RESULTS, f, indent=1, sort_keys=True)
    log("all done")


if __name__ == "__main__":
    main()
