#!/usr/bin/env python3
"""BF16 GEMMs of one linear layer in the three layouts training runs them in, timed round-robin
so that all three see the same clock: forward y = x W^T, input gradient dx = dy W and weight
gradient dW = dy^T x, at the Llama 3 8B layer's shapes (8192 tokens), on a GPU kept warm.

Writes <out>/layouts.json. Usage: measure_layouts.py OUT
"""
import json
import os
import statistics
import sys
import time

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = torch.device("cuda")
T = 8192


def timed(fn, calls=10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(calls):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3 / calls


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = []
    warm = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < 3:
        warm @ warm
    torch.cuda.synchronize()
    for name, (n, k) in {"qkv": (6144, 4096), "proj": (4096, 4096), "fc1": (28672, 4096),
                         "fc2": (4096, 14336)}.items():
        x = torch.randn(T, k, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
        dy = torch.randn(T, n, device=DEV, dtype=torch.bfloat16)
        calls = {"fprop x W^T": lambda: x @ w.t(), "dgrad dy W": lambda: dy @ w,
                 "wgrad dy^T x": lambda: dy.t() @ x}
        for fn in calls.values():
            fn()
        times = {label: [] for label in calls}
        for _ in range(7):
            for label, fn in calls.items():
                times[label].append(timed(fn))
        flops = 2.0 * T * n * k
        row = {"layer": name, "tokens": T, "n": n, "k": k}
        for label, ts in times.items():
            us = statistics.median(ts)
            row[label] = {"us": round(us, 2), "tflops": round(flops / (us * 1e-6) / 1e12, 1)}
        rows.append(row)
        print(row, flush=True)
    with open(os.path.join(OUT, "layouts.json"), "w") as f:
        json.dump({"rows": rows, "method": "median of 7 rounds of 10 calls per layout, the three "
                   "layouts round-robin, after 3 s of 8192^3 GEMMs; random normal bf16"}, f, indent=1)


if __name__ == "__main__":
    main()
