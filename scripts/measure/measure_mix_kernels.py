#!/usr/bin/env python3
"""The kernels of one step of measure_mix.py's Llama block (forward and backward, 8192 tokens),
by name with their summed times, after 10 s of steps: what that script's GEMM, attention and
other buckets hold. Writes <out>/mix_kernels.json. Usage: measure_mix_kernels.py OUT"""
import json
import os
import sys
import time

import torch

from measure_host import Block, kernel_times

OUT = sys.argv[1] if len(sys.argv) > 1 else "."


def main():
    os.makedirs(OUT, exist_ok=True)
    blk = Block(4096, 14336, 32).to("cuda", torch.bfloat16)
    inp = torch.randn(1, 8192, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        blk(inp).sum().backward()

    t0 = time.time()
    while time.time() - t0 < 10:
        step()
        torch.cuda.synchronize()
    kernels = kernel_times(step)
    rows = sorted(([n[:160], c, round(t, 1)] for n, (c, t) in kernels.items()), key=lambda r: -r[2])
    for r in rows[:25]:
        print(r, flush=True)
    with open(os.path.join(OUT, "mix_kernels.json"), "w") as f:
        json.dump({"kernels": rows}, f, indent=1)


if __name__ == "__main__":
    main()
