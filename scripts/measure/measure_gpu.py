#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU, the kernel figures the compute model rests on.

Sections (each independent; a failure is recorded and the next one runs):
  clocks      SM clock, power and GEMM rate over time from idle under back-to-back GEMMs
  bursts      short bursts from idle, as one-shot benchmarks time them
  gemm        BF16 and FP8 GEMMs at the shapes of 1B-70B dense models (sustained clock)
  attention   PyTorch SDPA, FlashAttention-2 and cuDNN backends, forward and backward
  memory      streaming kernels: copy, eager RMSNorm and SwiGLU, cross-entropy, AdamW, clipping
  host        eager per-kernel dispatch cost, CUDA-graph kernel gaps, one eager layer's kernels
  interference  a GEMM beside a kernel that holds some SMs (the NCCL-CTA tail effect)

Writes <out>/gpu_measurements.json (every figure with its method) and <out>/clock_trace.csv.
Needs PyTorch with CUDA, nvidia-ml-py, and CuPy for the interference section.
Usage: measure_gpu.py OUT_DIR [SECTION ...]
"""
import json
import os
import sys
import threading
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
ONLY = set(sys.argv[2:])
RESULTS = {"sections": {}}
DEV = torch.device("cuda")


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def save():
    with open(os.path.join(OUT, "gpu_measurements.json"), "w") as f:
        json.dump(RESULTS, f, indent=1, sort_keys=True)


# ---- NVML sampler: one row every 20 ms, labelled with the section running ----------------------
class Sampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        import pynvml as nv
        self.nv = nv
        nv.nvmlInit()
        self.h = nv.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.rows = []
        self.label = "start"
        self.t0 = time.perf_counter()
        self.stop_flag = False

    def now(self):
        return time.perf_counter() - self.t0

    def run(self):
        nv, h = self.nv, self.h
        while not self.stop_flag:
            try:
                sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
                mem = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
                pw = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
                tc = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
                try:
                    reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
                except Exception:
                    reasons = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
                self.rows.append((round(self.now(), 4), self.label, sm, mem, pw, tc, int(reasons)))
            except Exception as e:  # keep sampling; note the failure once
                self.rows.append((round(self.now(), 4), "nvml-error:" + str(e), 0, 0, 0, 0, 0))
                time.sleep(0.5)
            time.sleep(0.02)

    def static_info(self):
        nv, h = self.nv, self.h
        info = {}
        for key, fn in [
            ("name", lambda: nv.nvmlDeviceGetName(h)),
            ("driver", lambda: nv.nvmlSystemGetDriverVersion()),
            ("power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
            ("power_default_limit_w", lambda: nv.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000),
            ("max_sm_clock_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
            ("max_mem_clock_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
            ("app_sm_clock_mhz", lambda: nv.nvmlDeviceGetApplicationsClock(h, nv.NVML_CLOCK_SM)),
            ("default_app_sm_clock_mhz", lambda: nv.nvmlDeviceGetDefaultApplicationsClock(h, nv.NVML_CLOCK_SM)),
            ("memory_total_mib", lambda: nv.nvmlDeviceGetMemoryInfo(h).total / 2**20),
        ]:
            try:
                v = fn()
                info[key] = v.decode() if isinstance(v, bytes) else v
            except Exception as e:
                info[key] = "unavailable: " + str(e)
        return info

    def window(self, t_from, t_to):
        """Mean SM clock and power over [t_from, t_to] (sampler time)."""
        rows = [r for r in self.rows if t_from <= r[0] <= t_to and r[2] > 0]
        if not rows:
            return {}
        n = len(rows)
        return {"sm_clock_mhz": round(sum(r[2] for r in rows) / n, 1),
                "power_w": round(sum(r[4] for r in rows) / n, 1),
                "temp_c": round(sum(r[5] for r in rows) / n, 1), "samples": n}


SAMPLER = None


def clock_during(fn):
    """Runs fn() and returns (its result, the mean clock and power while it ran)."""
    t0 = SAMPLER.now() if SAMPLER else 0
    r = fn()
    t1 = SAMPLER.now() if SAMPLER else 0
    return r, (SAMPLER.window(t0, t1) if SAMPLER else {})


# ---- timing -------------------------------------------------------------------------------------
def events():
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def eager_time_us(fn, iters):
    s, e = events()
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3 / iters


def bench_us(fn, min_ms=40.0, warmup=3, graph=True):
    """Mean GPU time of fn() in us. Short calls replay from a CUDA graph, so that the host's
    dispatch cost is not timed; longer ones run eagerly back to back."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    probe = eager_time_us(fn, 5)
    iters = int(max(10, min(2000, min_ms * 1e3 / max(probe, 1.0))))
    if probe > 300 or not graph:
        return eager_time_us(fn, iters), "eager", iters
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(iters):
                fn()
        g.replay()
        torch.cuda.synchronize()
        s, e = events()
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        t = s.elapsed_time(e) * 1e3 / iters
        del g
        return t, "cuda_graph", iters
    except Exception as ex:  # some kernels cannot be captured: time them eagerly
        torch.cuda.synchronize()
        return eager_time_us(fn, iters), "eager (graph failed: %s)" % type(ex).__name__, iters


def section(name):
    def wrap(fn):
        def run():
            if ONLY and name not in ONLY:
                return
            log("section", name)
            if SAMPLER:
                SAMPLER.label = name
            t = time.time()
            try:
                RESULTS["sections"][name] = fn()
            except Exception:
                RESULTS["sections"][name] = {"error": traceback.format_exc()}
                log(traceback.format_exc())
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            log("section", name, "done in %.1f s" % (time.time() - t))
            save()
        return run
    return wrap


def gemm_inputs(m, n, k, dtype):
    x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16)
    if dtype == "fp8":
        xa = x.to(torch.float8_e4m3fn)
        wb = w.to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=DEV)
        return lambda: torch._scaled_mm(xa, wb.t(), scale_a=one, scale_b=one,
                                        out_dtype=torch.bfloat16, use_fast_accum=True)
    if dtype == "tf32":
        x, w = x.float(), w.float()
    wt = w.t()
    return lambda: torch.matmul(x, wt)


def tflops(m, n, k, us):
    return 2.0 * m * n * k / (us * 1e-6) / 1e12


# ---- sections -----------------------------------------------------------------------------------
@section("clocks")
def clocks():
    """GEMMs back to back from idle: the rate and the SM clock over time."""
    out = {}
    torch.backends.cuda.matmul.allow_tf32 = True
    for label, (m, dtype, seconds) in {"bf16_8192": (8192, "bf16", 25.0),
                                       "fp8_8192": (8192, "fp8", 8.0),
                                       "tf32_8192": (8192, "tf32", 6.0)}.items():
        fn = gemm_inputs(m, m, m, dtype)
        torch.cuda.synchronize()
        SAMPLER.label = "idle-before-" + label
        time.sleep(6.0)
        SAMPLER.label = "clocks-" + label
        t_start = SAMPLER.now()
        batches = []
        while SAMPLER.now() - t_start < seconds:
            pairs = []
            for _ in range(20):
                s, e = events()
                s.record()
                for _ in range(5):
                    fn()
                e.record()
                pairs.append((s, e))
            pairs[-1][1].synchronize()
            t_host = SAMPLER.now() - t_start
            batches.append((t_host, [p[0].elapsed_time(p[1]) / 5 for p in pairs]))
        series = []
        t_gpu = 0.0
        for t_host, ms_list in batches:
            for ms in ms_list:
                t_gpu += ms * 5
                series.append((round(t_gpu, 2), round(tflops(m, m, m, ms * 1e3), 1)))
        # rate per 250 ms window of GPU time, with the sampler's clock over the same window
        windows = []
        step = 250.0
        edge, acc, cnt = step, 0.0, 0
        for t_ms, rate in series:
            acc += rate
            cnt += 1
            if t_ms >= edge:
                w = SAMPLER.window(t_start + (edge - step) / 1e3, t_start + edge / 1e3)
                windows.append({"t_ms": edge, "tflops": round(acc / cnt, 1), **w})
                edge += step
                acc, cnt = 0.0, 0
        first = series[: max(1, len(series) // 50)]
        out[label] = {
            "shape": [m, m, m], "dtype": dtype,
            "first_calls_tflops": [r for _, r in series[:40]],
            "first_2pct_mean_tflops": round(sum(r for _, r in first) / len(first), 1),
            "last_5s_mean_tflops": round(sum(r for t, r in series if t > series[-1][0] - 5000)
                                         / max(1, sum(1 for t, _ in series if t > series[-1][0] - 5000)), 1),
            "windows_250ms": windows,
            "calls": len(series),
        }
        del fn
        torch.cuda.empty_cache()
        save()
    return out


@section("bursts")
def bursts():
    """36 timed calls from 3 s of idle, the protocol of one-shot PyTorch benchmarks."""
    torch.backends.cuda.matmul.allow_tf32 = True
    out = {}
    for label, (m, dtype) in {"tf32_4096": (4096, "tf32"), "bf16_4096": (4096, "bf16"),
                              "bf16_8192": (8192, "bf16"), "bf16_10240": (10240, "bf16"),
                              "tf32_8192": (8192, "tf32")}.items():
        fn = gemm_inputs(m, m, m, dtype)
        fn()
        torch.cuda.synchronize()
        SAMPLER.label = "idle-burst"
        time.sleep(3.0)
        SAMPLER.label = "burst-" + label
        t0 = SAMPLER.now()
        pairs = []
        for _ in range(36):
            s, e = events()
            s.record()
            fn()
            e.record()
            pairs.append((s, e))
        pairs[-1][1].synchronize()
        t1 = SAMPLER.now()
        ms = [p[0].elapsed_time(p[1]) for p in pairs]
        total = sum(ms)
        out[label] = {"shape": [m, m, m], "dtype": dtype, "calls": 36, "total_ms": round(total, 2),
                      "mean_tflops": round(tflops(m, m, m, total / 36 * 1e3), 1),
                      "per_call_tflops": [round(tflops(m, m, m, x * 1e3), 1) for x in ms],
                      **SAMPLER.window(t0, t1 + 0.02)}
        del fn
    return out


def model_shapes():
    """(name, m, n, k): forward GEMMs of nn.Linear (x[m,k] @ W[n,k]^T) at 8192 tokens, and the
    weight-gradient shapes (k = tokens) of two of them."""
    t = 8192
    shapes = []
    for square in (1024, 2048, 4096, 6144, 8192):
        shapes.append(("square-%d" % square, square, square, square))
    for model, h, ffn, q, kv in [("llama3.2-1b", 2048, 8192, 2048, 512),
                                 ("llama3.2-3b", 3072, 8192, 3072, 1024),
                                 ("llama3-8b", 4096, 14336, 4096, 1024),
                                 ("llama2-13b", 5120, 13824, 5120, 5120)]:
        shapes += [(model + "-qkv", t, q + 2 * kv, h), (model + "-proj", t, h, q),
                   (model + "-fc1", t, 2 * ffn, h), (model + "-fc2", t, h, ffn)]
    # Llama 3 70B with TP 8 (Megatron column/row parallel shards)
    shapes += [("llama3-70b-tp8-qkv", t, 1280, 8192), ("llama3-70b-tp8-proj", t, 8192, 1024),
               ("llama3-70b-tp8-fc1", t, 7168, 8192), ("llama3-70b-tp8-fc2", t, 8192, 3584)]
    shapes += [("llama3-8b-fc2-wgrad", 4096, 14336, t), ("llama3-8b-qkv-wgrad", 6144, 4096, t),
               ("llama3.2-1b-fc1-wgrad", 16384, 2048, t), ("llama3-8b-fc1-dgrad", t, 4096, 28672)]
    shapes += [("llama3-8b-lm-head", t, 128256, 4096), ("llama3.2-1b-lm-head", t, 128256, 2048)]
    shapes += [("tokens-2048-llama3-8b-fc1", 2048, 28672, 4096),
               ("tokens-4096-llama3.2-1b-qkv", 4096, 3072, 2048)]
    return shapes


@section("gemm")
def gemm():
    # warm the GPU to its sustained clock first (the sweep should not ride a boost)
    warm = gemm_inputs(8192, 8192, 8192, "bf16")
    t0 = time.time()
    while time.time() - t0 < 4:
        warm()
        torch.cuda.synchronize()
    del warm
    rows = []
    for name, m, n, k in model_shapes():
        for dtype in ("bf16", "fp8"):
            try:
                fn = gemm_inputs(m, n, k, dtype)
                (us, how, iters), clk = clock_during(lambda: bench_us(fn))
                rows.append({"name": name, "m": m, "n": n, "k": k, "dtype": dtype,
                             "time_us": round(us, 2), "tflops": round(tflops(m, n, k, us), 1),
                             "timing": how, "iters": iters, **clk})
                del fn
            except Exception as ex:
                rows.append({"name": name, "dtype": dtype, "error": repr(ex)})
        log(rows[-2].get("name"), rows[-2].get("tflops"), rows[-1].get("tflops"))
    torch.cuda.empty_cache()
    return {"rows": rows, "layout": "x[m,k] @ W[n,k]^T (nn.Linear), random normal data; fp8: "
            "torch._scaled_mm e4m3 per-tensor scale, fast accumulation, bf16 output"}


def attention_flops(b, h, s, d, causal, backward):
    f = 4.0 * b * h * s * s * d
    if causal:
        f /= 2
    return f * 2.5 if backward else f


@section("attention")
def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = []
    tokens = 16384
    for backend_name, backend in (("flash2", SDPBackend.FLASH_ATTENTION),
                                  ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        for d, heads in ((128, 16), (64, 32)):
            for s in (512, 1024, 2048, 4096, 8192, 16384):
                b = tokens // s
                for causal in (False, True):
                    row = {"backend": backend_name, "batch": b, "heads": heads, "seq": s,
                           "head_dim": d, "causal": causal}
                    try:
                        q, k, v = (torch.randn(b, heads, s, d, device=DEV, dtype=torch.bfloat16,
                                               requires_grad=True) for _ in range(3))
                        with sdpa_kernel(backend):
                            fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            us_f, how_f, _ = bench_us(fwd, min_ms=30)
                            o = fwd()
                            go = torch.randn_like(o)
                            bwd = lambda: torch.autograd.grad(o, (q, k, v), go, retain_graph=True)
                            us_b, how_b, _ = bench_us(bwd, min_ms=30, graph=False)
                        row.update({
                            "fwd_us": round(us_f, 2), "bwd_us": round(us_b, 2),
                            "fwd_tflops": round(attention_flops(b, heads, s, d, causal, False) / us_f / 1e6, 1),
                            "bwd_tflops": round(attention_flops(b, heads, s, d, causal, True) / us_b / 1e6, 1),
                            "timing": [how_f, how_b]})
                        del q, k, v, o, go
                    except Exception as ex:
                        row["error"] = repr(ex)[:300]
                    rows.append(row)
            log(backend_name, d, [(r.get("seq"), r.get("fwd_tflops"), r.get("bwd_tflops")) for r in rows[-12:]])
    return {"rows": rows, "flops": "forward 4*b*h*s^2*d (halved when causal), backward 2.5x forward",
            "layout": "q, k, v [batch, heads, seq, head_dim] bf16, tokens = batch x seq = 16384"}


@section("memory")
def memory():
    rows = []

    def add(name, fn, bytes_moved, graph=True, **extra):
        us, how, iters = bench_us(fn, min_ms=40, graph=graph)
        rows.append({"name": name, "time_us": round(us, 2), "bytes": bytes_moved,
                     "tb_per_s": round(bytes_moved / (us * 1e-6) / 1e12, 3), "timing": how, **extra})
        log(name, rows[-1]["tb_per_s"])

    n = 1 << 30  # 1 Gi bf16 elements: 2 GiB
    a = torch.randn(n, device=DEV, dtype=torch.bfloat16)
    b = torch.empty_like(a)
    add("copy-bf16-2GiB", lambda: b.copy_(a), 2 * 2 * n)
    add("add-bf16-2GiB", lambda: torch.add(a, a, out=b), 3 * 2 * n)
    for size in (1 << 20, 1 << 22, 1 << 24, 1 << 26):  # small copies: where launch and ramp show
        x = a[:size]
        y = b[:size]
        add("copy-bf16-%dMiB" % (size * 2 >> 20), lambda: y.copy_(x), 2 * 2 * size)
    del a, b
    tokens = 8192
    for h in (2048, 4096, 8192):
        x = torch.randn(tokens, h, device=DEV, dtype=torch.bfloat16)
        w = torch.ones(h, device=DEV, dtype=torch.bfloat16)

        def eager_rms():  # the unfused norm of Hugging Face / torchtitan eager Llama
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

        add("rmsnorm-eager-fwd-%dx%d" % (tokens, h), eager_rms, 2 * 2 * tokens * h,
            note="bytes: one bf16 read and write; the kernels move more")
        add("rmsnorm-F.rms_norm-fwd-%dx%d" % (tokens, h),
            lambda: F.rms_norm(x, (h,), w, 1e-5), 2 * 2 * tokens * h)
        add("layernorm-fwd-%dx%d" % (tokens, h), lambda: F.layer_norm(x, (h,), w, None, 1e-5),
            2 * 2 * tokens * h)
        del x
    for ffn in (8192, 14336):
        g = torch.randn(tokens, ffn, device=DEV, dtype=torch.bfloat16)
        u = torch.randn_like(g)
        add("swiglu-eager-fwd-%dx%d" % (tokens, ffn), lambda: F.silu(g) * u, 3 * 2 * tokens * ffn,
            note="bytes: two bf16 reads and one write; eager runs two kernels")
        del g, u
    logits = torch.randn(tokens, 128256, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, 128256, (tokens,), device=DEV)

    def ce():
        loss = F.cross_entropy(logits.float(), target)
        return torch.autograd.grad(loss, logits)

    add("cross-entropy-fp32-upcast-fwd-bwd-8192x128256", ce, 2 * 2 * tokens * 128256, graph=False,
        note="bytes: bf16 logits read, bf16 grad written; the upcast adds fp32 traffic")
    del logits
    torch.cuda.empty_cache()
    # optimizer and clipping over 1e9 fp32 parameters in 100 tensors
    params = [torch.zeros(10_000_000, device=DEV, requires_grad=True) for _ in range(100)]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    nparam = sum(p.numel() for p in params)
    for fused in (True, False):
        opt = torch.optim.AdamW(params, lr=1e-4, fused=fused, foreach=None if fused else True)
        add("adamw-%s-1e9-fp32" % ("fused" if fused else "foreach"), lambda: opt.step(), 28 * nparam,
            note="bytes: read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq")
        del opt
        torch.cuda.empty_cache()
    add("clip-grad-norm-foreach-1e9-fp32",
        lambda: torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True), 8 * nparam,
        note="bytes: read every grad for the norm, then read and write it to scale")
    del params
    return {"rows": rows}


@section("host")
def host():
    out = {}
    x = torch.zeros(1, device=DEV)
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    n = 20000
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    out["eager_tiny_add"] = {"host_issue_us_per_op": round((t1 - t0) / n * 1e6, 3),
                             "wall_us_per_op": round((t2 - t0) / n * 1e6, 3)}
    us, how, iters = bench_us(lambda: x.add_(1), min_ms=20)
    out["graph_tiny_add_us_per_kernel"] = round(us, 3)
    # an eager Llama-style block, fwd + bwd: the host sets the pace of the small one
    from measure_host import BLOCK_SIZES, Block, kernel_times

    for label, (h, ffn, heads, seq) in BLOCK_SIZES.items():
        blk = Block(h, ffn, heads).to(DEV, torch.bfloat16)
        inp = torch.randn(1, seq, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)

        def step():
            y = blk(inp)
            y.sum().backward()

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        iters = 50
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        kernels = kernel_times(step)
        gpu_us = sum(us for _, us in kernels.values())
        out["eager_block_" + label] = {
            "host_issue_us_per_step": round((t1 - t0) / iters * 1e6, 1),
            "wall_us_per_step": round((t2 - t0) / iters * 1e6, 1),
            "kernels_per_step": sum(calls for calls, _ in kernels.values()),
            "kernel_busy_us_per_step": round(gpu_us, 1),
            "step": "forward, sum, backward of one block (qkv, sdpa causal, o, 2 RMSNorm, SwiGLU "
                    "MLP), batch 1, bf16, eager, no torch.compile"}
        log(label, out["eager_block_" + label])
        del blk, inp
    return out


HOLD_SRC = r'''
extern "C" __global__ void hold(float* buf, long long n, long long cycles, int copy) {
  extern __shared__ float smem[];
  long long start = clock64();
  if (threadIdx.x == 0) smem[0] = 1.f;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  long long half = n / 2;
  while (clock64() - start < cycles) {
    if (copy) {
      for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)half; i += stride)
        buf[i + half] = buf[i];
    }
  }
  if (threadIdx.x == 0 && smem[0] == 12345.f) buf[0] = smem[0];
}
'''


@section("interference")
def interference():
    import cupy as cp
    kern = cp.RawKernel(HOLD_SRC, "hold")
    smem = 200 * 1024
    kern.max_dynamic_shared_size_bytes = smem
    buf = cp.zeros(64 << 20, dtype=cp.float32)  # 256 MB
    side = torch.cuda.Stream()
    cstream = cp.cuda.ExternalStream(side.cuda_stream)
    clock_hz = 2.0e9
    out = {"holder": "one CTA of 1024 threads and 200 KB shared memory per held SM, spinning on "
                     "clock64 (spin) or copying a 256 MB buffer (copy) for 30 ms"}
    rows = []
    for (m, n, k) in ((2500, 5120, 5120), (8192, 8192, 8192), (4096, 4096, 4096), (2048, 5120, 5120)):
        fn = gemm_inputs(m, n, k, "bf16")
        bench_us(fn, min_ms=10, graph=False)
        alone = sorted(eager_time_us(fn, 5) for _ in range(5))[2]
        # the GEMM's grid, read off the profiler's trace
        grid = None
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            path = os.path.join("/tmp", "gemm_trace.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                tr = json.load(f)
            ks = [e for e in tr.get("traceEvents", []) if e.get("cat") == "kernel"]
            grid = [(e.get("name", "")[:120], e.get("args", {}).get("grid"),
                     e.get("args", {}).get("block"), e.get("args", {}).get("registers per thread"),
                     e.get("args", {}).get("shared memory")) for e in ks]
        except Exception as ex:
            grid = "unavailable: " + repr(ex)[:200]
        for held in (8, 16, 24, 32):
            for copy in (0, 1):
                times = []
                for _ in range(5):
                    with cstream:
                        kern((held,), (1024,), (buf, cp.int64(buf.size), cp.int64(int(0.03 * clock_hz)),
                                                 cp.int32(copy)), shared_mem=smem)
                    time.sleep(0.003)
                    s, e = events()
                    s.record()
                    for _ in range(5):
                        fn()
                    e.record()
                    e.synchronize()
                    times.append(s.elapsed_time(e) * 1e3 / 5)
                    side.synchronize()
                beside = sorted(times)[len(times) // 2]
                rows.append({"m": m, "n": n, "k": k, "held_sms": held, "holder": "copy" if copy else "spin",
                             "alone_us": round(alone, 2), "beside_us": round(beside, 2),
                             "slowdown": round(beside / alone, 3)})
        out.setdefault("gemm_kernels", {})["%dx%dx%d" % (m, n, k)] = grid
        log(m, n, k, [(r["held_sms"], r["holder"], r["slowdown"]) for r in rows[-8:]])
        del fn
    out["rows"] = rows
    return out


def main():
    global SAMPLER
    os.makedirs(OUT, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    RESULTS["device"] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                         "cudnn": torch.backends.cudnn.version(), "name": props.name,
                         "sm_count": props.multi_processor_count,
                         "memory_bytes": props.total_memory, "date": time.strftime("%Y-%m-%d")}
    try:
        SAMPLER = Sampler()
        RESULTS["device"].update(SAMPLER.static_info())
        SAMPLER.start()
    except Exception:
        RESULTS["device"]["nvml"] = traceback.format_exc()
        SAMPLER = None
    log(RESULTS["device"])
    save()
    for run in (clocks, bursts, gemm, attention, memory, host, interference):
        if SAMPLER is None and run in (clocks, bursts):
            continue
        run()
    if SAMPLER:
        SAMPLER.stop_flag = True
        time.sleep(0.1)
        with open(os.path.join(OUT, "clock_trace.csv"), "w") as f:
            f.write("t_s,section,sm_mhz,mem_mhz,power_w,temp_c,clock_event_reasons\n")
            for r in SAMPLER.rows:
                f.write(",".join(str(v) for v in r) + "\n")
    save()
    log("all done")


if __name__ == "__main__":
    main()
