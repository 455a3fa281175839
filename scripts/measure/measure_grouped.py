#!/usr/bin/env python3
"""Grouped GEMMs of mixture-of-experts layers at small token counts per expert: PyTorch's
torch._grouped_mm (BF16, the kernel torchtitan's MoE runs) over G experts of m tokens each, at
the expert shapes of DeepSeek-V3, Qwen3-30B-A3B and Mixtral, with the SM clock during each.

Writes <out>/grouped.json. Usage: measure_grouped.py OUT
"""
import json
import os
import sys
import time
import traceback

import torch

from measure_gpu import Sampler, bench_us, clock_during
import measure_gpu

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = torch.device("cuda")


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def grouped(groups, m, n, k):
    x = torch.randn(groups * m, k, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(groups, n, k, device=DEV, dtype=torch.bfloat16)  # [E, out, in], as nn weights
    offs = torch.arange(m, groups * m + 1, m, device=DEV, dtype=torch.int32)
    wt = w.transpose(-2, -1)
    return lambda: torch._grouped_mm(x, wt, offs=offs, out_dtype=torch.bfloat16)


def main():
    os.makedirs(OUT, exist_ok=True)
    measure_gpu.SAMPLER = Sampler()
    measure_gpu.SAMPLER.start()
    rows = []
    shapes = {"deepseek-v3-fc1": (4096, 7168), "deepseek-v3-fc2": (7168, 2048),
              "qwen3-30b-a3b-fc1": (1536, 2048), "qwen3-30b-a3b-fc2": (2048, 768),
              "mixtral-fc1": (28672, 4096)}
    for name, (n, k) in shapes.items():
        for groups in (8, 32):
            for m in (128, 256, 512, 1024, 2048):
                if name.startswith("mixtral") and groups == 32:
                    continue
                row = {"shape": name, "groups": groups, "m": m, "n": n, "k": k}
                try:
                    fn = grouped(groups, m, n, k)
                    (us, how, iters), clk = clock_during(lambda: bench_us(fn, min_ms=30))
                    row.update({"time_us": round(us, 2), "timing": how,
                                "tflops": round(2.0 * groups * m * n * k / (us * 1e-6) / 1e12, 1), **clk})
                    del fn
                except Exception as ex:
                    row["error"] = repr(ex)[:300]
                rows.append(row)
            log(name, groups, [(r["m"], r.get("tflops", r.get("error", "")[:60])) for r in rows[-5:]])
        torch.cuda.empty_cache()
    measure_gpu.SAMPLER.stop_flag = True
    with open(os.path.join(OUT, "grouped.json"), "w") as f:
        json.dump({"rows": rows, "kernel": "torch._grouped_mm, bf16, x[G*m, k] @ W[G, n, k]^T, "
                   "offsets every m rows; random normal inputs; CUDA graph replay under 300 us"},
                  f, indent=1)
    log("all done")


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
