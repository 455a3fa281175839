#!/usr/bin/env python3
"""Measures the host (CPU) side of eager PyTorch training on one GPU: what each launched kernel
costs the Python thread that issues it, with and without autograd, under FSDP2's hooks and under
torch.compile. A step whose kernels are shorter than this is host-bound.

Writes <out>/host_measurements.json. Usage: measure_host.py OUT_DIR
"""
import json
import os
import platform
import subprocess
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
DEV = torch.device("cuda")
RESULTS = {}


def log(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def save():
    with open(os.path.join(OUT, "host_measurements.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, sort_keys=True)


def cpu_info():
    info = {"python": platform.python_version(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "cores": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        info["lscpu"] = subprocess.run(["lscpu"], capture_output=True, text=True).stdout[:3000]
    except Exception as e:
        info["cpu_error"] = repr(e)
    return info


def kernel_times(fn):
    """{kernel name: [calls, summed device us]} of one profiled call of fn()."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        k = kernels.setdefault(e.name, [0, 0.0])
        k[0] += 1
        k[1] += float(getattr(e, "device_time", 0.0) or e.cuda_time)
    return kernels


def kernel_class(name):
    """gemm, attention or other, by a CUDA kernel's name (cuBLAS, CUTLASS, cuDNN, FlashAttention)."""
    name = name.lower()
    attention = any(s in name for s in ("flash", "fmha", "sdpa", "attention", "cudnn"))
    if not attention and any(s in name for s in ("gemm", "nvjet", "xmma", "cutlass", "sm90")):
        return "gemm"
    return "attention" if attention else "other"


def time_by_class(fn):
    """Summed device us of one profiled call of fn() by kernel_class."""
    by = {}
    for name, (_, us) in kernel_times(fn).items():
        by[kernel_class(name)] = by.get(kernel_class(name), 0.0) + us
    return by


def count_kernels(fn):
    return sum(calls for calls, _ in kernel_times(fn).values())


def host_us(fn, iters):
    """Host time per call while the GPU keeps up (tiny tensors), and the kernels one call runs."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return {"host_us": round((t1 - t0) / iters * 1e6, 2), "wall_us": round((t2 - t0) / iters * 1e6, 2)}


def per_op():
    """Single aten ops on tiny tensors, no autograd, then with autograd (forward + backward)."""
    x = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    q = torch.randn(1, 2, 64, 32, device=DEV, dtype=torch.bfloat16)
    g = torch.ones(64, device=DEV, dtype=torch.bfloat16)
    ops = {"add": lambda: x + x, "mul_scalar": lambda: x * 2.0, "silu": lambda: F.silu(x),
           "to_float": lambda: x.float(), "linear": lambda: F.linear(x, w),
           "matmul": lambda: x @ w, "rms_norm": lambda: F.rms_norm(x, (64,), g, 1e-5),
           "sdpa": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True),
           "cat": lambda: torch.cat([x, x]), "copy_": lambda: w.copy_(x)}
    out = {}
    with torch.no_grad():
        for name, fn in ops.items():
            out[name] = host_us(fn, 3000)
    # autograd: a chain of n element-wise ops, forward then backward
    n = 200
    a = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16, requires_grad=True)

    def chain():
        y = a
        for _ in range(n):
            y = y * 1.0001
        return y

    def fwd_bwd():
        chain().sum().backward()

    f = host_us(chain, 30)
    fb = host_us(fwd_bwd, 30)
    out["autograd_mul_forward_per_op"] = round(f["host_us"] / n, 2)
    out["autograd_mul_forward_backward_per_op"] = round(fb["host_us"] / n, 2)
    out["autograd_chain_kernels"] = count_kernels(fwd_bwd)
    return out


# Llama-style blocks of three sizes, (hidden, FFN, heads, tokens): the host-bound tiny one, and
# 1B and 8B blocks at their training lengths (measure_gpu.py and measure_host_sizes.py).
BLOCK_SIZES = {"tiny-h256-s128": (256, 512, 4, 128),
               "1b-h2048-s2048": (2048, 8192, 16, 2048),
               "8b-h4096-s4096": (4096, 14336, 32, 4096)}


class Block(nn.Module):
    def __init__(self, h, ffn, heads, composite_norm=False):
        super().__init__()
        self.heads = heads
        self.composite = composite_norm
        self.qkv = nn.Linear(h, 3 * h, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.up = nn.Linear(h, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, h, bias=False)
        self.n1 = nn.RMSNorm(h)
        self.n2 = nn.RMSNorm(h)

    def norm(self, mod, x):
        if not self.composite:
            return mod(x)
        xf = x.float()  # PyTorch <= 2.7's rms_norm_composite for bf16 inputs
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * mod.weight).type_as(x)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm(self.n1, x)).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, h))
        g, u = self.up(self.norm(self.n2, x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class Model(nn.Module):
    def __init__(self, layers, composite=False, h=256, ffn=512, heads=4):
        super().__init__()
        self.layers = nn.ModuleList(Block(h, ffn, heads, composite) for _ in range(layers))

    def forward(self, x):
        for blk in self.layers:
            x = blk(x)
        return x


def step_fn(model, x):
    def step():
        model(x).sum().backward()
    return step


def blocks():
    """Tiny blocks (h 256, 128 tokens): host time per layer of a forward + backward, eager with
    the fused and the composite RMSNorm, and under torch.compile."""
    out = {}
    layers = 8
    x = torch.randn(1, 128, 256, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    for label, composite in (("eager_fused_norm", False), ("eager_composite_norm", True)):
        m = Model(layers, composite).to(DEV, torch.bfloat16)
        step = step_fn(m, x)
        r = host_us(step, 30)
        k = count_kernels(step)
        out[label] = {"host_us_per_layer": round(r["host_us"] / layers, 1),
                      "kernels_per_layer": round(k / layers, 1),
                      "host_us_per_kernel": round(r["host_us"] / k, 2)}
        log(label, out[label])
    save()
    try:
        m = Model(layers, False).to(DEV, torch.bfloat16)
        for blk in m.layers:  # torchtitan compiles each block
            blk.compile()
        step = step_fn(m, x)
        t = time.time()
        step()
        torch.cuda.synchronize()
        compile_s = time.time() - t
        r = host_us(step, 30)
        k = count_kernels(step)
        out["compiled_per_block"] = {"host_us_per_layer": round(r["host_us"] / layers, 1),
                                     "kernels_per_layer": round(k / layers, 1),
                                     "host_us_per_kernel": round(r["host_us"] / k, 2),
                                     "compile_s": round(compile_s, 1)}
        log("compiled", out["compiled_per_block"])
    except Exception:
        out["compiled_per_block"] = {"error": traceback.format_exc()[-1500:]}
    return out


def fsdp2():
    """FSDP2 (fully_shard per block and at the root) on a one-rank NCCL group: the hooks' host
    time per unit over the same eager model without them."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    out = {}
    layers = 8
    x = torch.randn(1, 128, 256, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    for reshard in (True, False):
        m = Model(layers, False).to(DEV, torch.bfloat16)
        for blk in m.layers:
            fully_shard(blk, reshard_after_forward=reshard)
        fully_shard(m)
        step = step_fn(m, x)
        r = host_us(step, 30)
        k = count_kernels(step)
        out["reshard_after_forward_%s" % reshard] = {
            "host_us_per_layer": round(r["host_us"] / layers, 1), "wall_us_per_layer": round(r["wall_us"] / layers, 1),
            "kernels_per_layer": round(k / layers, 1)}
        log("fsdp2", reshard, out["reshard_after_forward_%s" % reshard])
    dist.destroy_process_group()
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    RESULTS["cpu"] = cpu_info()
    log({k: v for k, v in RESULTS["cpu"].items() if k != "lscpu"})
    for name, fn in (("per_op", per_op), ("blocks", blocks), ("fsdp2", fsdp2)):
        t = time.time()
        try:
            RESULTS[name] = fn()
        except Exception:
            RESULTS[name] = {"error": traceback.format_exc()[-2000:]}
            log(RESULTS[name]["error"])
        log(name, "done in %.1f s" % (time.time() - t))
        save()
    log("all done")


if __name__ == "__main__":
    main()
