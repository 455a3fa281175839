#!/usr/bin/env python3
"""Writes the markdown table of one GPU's measurements (the scripts beside this one) that the GPU
profiles and validate cases cite. Usage: measured_table.py PREFIX OUT.md, where PREFIX.json is
measure_gpu.py's output and PREFIX-host.json, -host-sizes, -mix, -mix-kernels, -mix-fp8,
-layouts and -grouped the others' (each but the first two optional; a -run2 file beside one is a
second run on another machine)."""
import json
import os
import sys


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def load(prefix, suffix):
    path = prefix + suffix + ".json"
    return json.load(open(path)) if os.path.exists(path) else None


def main(prefix, out_path):
    kernels_path = prefix + ".json"
    k = load(prefix, "")
    h = load(prefix, "-host")
    h2 = load(prefix, "-host-run2")
    sizes = load(prefix, "-host-sizes")
    mix = load(prefix, "-mix")
    grouped = load(prefix, "-grouped")
    mix_fp8 = load(prefix, "-mix-fp8")
    layouts = load(prefix, "-layouts")
    mix_kernels = load(prefix, "-mix-kernels")
    mix_kernels2 = load(prefix, "-mix-kernels-run2")
    s = k["sections"]
    d = k["device"]
    md = [f"# Kernel and host measurements: {d['name']}, {d['date']}\n",
          f"Measured by `scripts/measure/measure_gpu.py`, `measure_host.py`, `measure_host_sizes.py`, "
          f"`measure_mix.py`, `measure_mix_kernels.py`, `measure_mix_fp8.py`, `measure_layouts.py` and `measure_grouped.py` (raw figures: the JSON files beside this one, "
          f"the SM clock and power trace every 20 ms of `measure_gpu.py`: the `-clocks.csv`). Driver {d['driver']}, PyTorch "
          f"{d['torch']}, CUDA {d['cuda']}, cuDNN {d['cudnn']}, {d['sm_count']} SMs, power limit "
          f"{d['power_limit_w']:.0f} W, top SM clock {d['max_sm_clock_mhz']} MHz; host "
          f"{h['cpu'].get('cpu', '?')} ({h['cpu'].get('cores')} cores of a virtual machine). "
          "Random normal inputs; times from CUDA events, kernels under 300 us replayed from a CUDA "
          "graph so that the host's dispatch is not timed. This page: `scripts/measure/measured_table.py` over "
          "those files.\n"]
    md.append("\n## GEMMs back to back from idle (8192^3): rate and SM clock over time\n\n")
    rows = []
    for label, c in s["clocks"].items():
        w = c["windows_250ms"]
        pick = [w[0], w[len(w) // 2], w[-1]]
        rows.append([label, c["first_calls_tflops"][1], c["first_2pct_mean_tflops"],
                     "; ".join(f"{x['t_ms'] / 1000:.2f} s: {x['tflops']} at {x['sm_clock_mhz']:.0f} MHz, "
                               f"{x['power_w']:.0f} W" for x in pick), c["last_5s_mean_tflops"]])
    md.append(table(["run", "first calls (TFLOP/s)", "first 2%", "windows (250 ms)",
                     "last 5 s (TFLOP/s)"], rows))
    if mix:
        b = mix["block"]
        md.append(f"\n## A training step's kernel mix (`scripts/measure/measure_mix.py`)\n\nOne Llama block "
                  f"(hidden {b['hidden']}, FFN {b['ffn']}, {b['heads']} heads, {b['tokens']} tokens), "
                  "forward and backward, eager (cuDNN attention, fused RMSNorm), back to back for 25 s "
                  "from 6 s of idle; kernel times per step from a profile at the start and at the end; "
                  f"{mix['gemm_flops_per_step']:.4g} GEMM FLOP a step.\n\n")
        rows = [[lbl, p.get("gemm"), p.get("attention"), p.get("other"), p.get("gemm_tflops")]
                for lbl, p in (("start (near the top clock)", mix["start_profile"]),
                               ("end (power-capped)", mix["end_profile"]))]
        md.append(table(["profile", "GEMM us", "attention us", "other us", "GEMM TFLOP/s"], rows))
        md.append("\n")
        rows = [[w["second"], w["step_ms"], w.get("sm_clock_mhz"), w.get("power_w")]
                for w in mix["windows_1s"][::4]]
        md.append(table(["second", "step (ms)", "SM MHz", "power (W)"], rows))
    for run, kernels in (("a second", mix_kernels), ("a third", mix_kernels2)):
        if not (mix and kernels):
            continue
        gemms = [r for r in kernels["kernels"] if r[0].startswith("nvjet")]
        us = sum(r[2] for r in gemms)
        md.append(f"\nThe same block on {run} lent machine after 10 s of steps "
                  f"(`scripts/measure/measure_mix_kernels.py`, every kernel by name): its "
                  f"{sum(r[1] for r in gemms)} GEMMs (cuBLAS nvjet kernels) took {us:.1f} us, "
                  f"{mix['gemm_flops_per_step'] / (us * 1e-6) / 1e12:.1f} TFLOP/s.\n")
    if mix_fp8:
        md.append("\nThe same layer's twelve GEMMs with Llama 3 8B's grouped KV heads, each in the "
                  "forward's layout (x W^T), in BF16 and in FP8 as Transformer Engine runs them (E4M3 "
                  "inputs, E5M2 gradients, a cast before each GEMM), between the layer's cuDNN "
                  "attention and element-wise kernels, 20 s each (`scripts/measure/measure_mix_fp8.py`; "
                  f"{mix_fp8['gemm_flops_per_step']:.4g} GEMM FLOP a step):\n\n")
        rows = [[lbl, mix_fp8[lbl]["step_ms"], mix_fp8[lbl]["kernel_us"].get("gemm"),
                 mix_fp8[lbl]["kernel_us"].get("attention"), mix_fp8[lbl]["kernel_us"].get("other"),
                 mix_fp8[lbl].get("gemm_tflops"), mix_fp8[lbl]["last_5s"].get("sm_clock_mhz")]
                for lbl in ("bf16", "fp8") if "step_ms" in mix_fp8[lbl]]
        md.append(table(["GEMMs", "step (ms)", "GEMM us", "attention us", "other us", "GEMM TFLOP/s",
                         "SM MHz (last 5 s)"], rows))
    md.append("\n## 36 calls after 3 s idle (one-shot benchmark protocol)\n\n")
    rows = [[lbl, b["total_ms"], b["mean_tflops"], max(b["per_call_tflops"][1:]), b["per_call_tflops"][-1]]
            for lbl, b in s["bursts"].items()]
    md.append(table(["burst", "total (ms)", "mean TFLOP/s", "best call", "last call"], rows))
    md.append("\n## GEMMs at model shapes (x[m,k] @ W[n,k]^T, after 4 s of load)\n\n")
    by = {}
    for r in s["gemm"]["rows"]:
        by.setdefault((r["name"], r.get("m"), r.get("n"), r.get("k")), {})[r["dtype"]] = r
    rows = [[n, m, nn, kk, v.get("bf16", {}).get("tflops", "-"), v.get("fp8", {}).get("tflops", "-"),
             v.get("bf16", {}).get("sm_clock_mhz", "-")] for (n, m, nn, kk), v in by.items()]
    md.append(table(["shape", "m", "n", "k", "BF16 TFLOP/s", "FP8 TFLOP/s", "SM MHz (BF16)"], rows))
    if grouped:
        md.append("\n## Grouped GEMMs of MoE experts (`scripts/measure/measure_grouped.py`: " + grouped["kernel"] +
                  "; the SM clock varied with the power cap, so each row gives its own)\n\n")
        rows = [[r["shape"], r["groups"], r["m"], r["n"], r["k"], r.get("tflops", r.get("error")),
                 r.get("sm_clock_mhz", "-")] for r in grouped["rows"]]
        md.append(table(["experts", "groups", "m (tokens each)", "n", "k", "TFLOP/s", "SM MHz"], rows))
    if layouts:
        md.append("\n## One layer's BF16 GEMMs in their three layouts (`scripts/measure/measure_layouts.py`: "
                  + layouts["method"] + "; TFLOP/s)\n\n")
        labels = ["fprop x W^T", "dgrad dy W", "wgrad dy^T x"]
        rows = [[r["layer"], r["tokens"], r["n"], r["k"]] + [r[lbl]["tflops"] for lbl in labels]
                for r in layouts["rows"]]
        md.append(table(["layer", "tokens", "n", "k"] + labels, rows))
    md.append("\n## Attention (PyTorch SDPA, 16,384 tokens a call; FLOPs as FlashAttention counts)\n\n")
    rows = [[r["backend"], r["head_dim"], r["heads"], r["seq"], "causal" if r["causal"] else "full",
             r.get("fwd_tflops", "-"), r.get("bwd_tflops", "-")] for r in s["attention"]["rows"]]
    md.append(table(["backend", "head dim", "heads", "seq", "mask", "fwd TFLOP/s", "bwd TFLOP/s"], rows))
    md.append("\n## Memory-bound kernels\n\n")
    rows = [[r["name"], r["time_us"], r["tb_per_s"], r.get("note", "")] for r in s["memory"]["rows"]]
    md.append(table(["kernel", "time (us)", "TB/s of the bytes named", "bytes"], rows))
    md.append("\n## Host dispatch (eager PyTorch, autograd on)\n\n")
    rows = [[op, v["host_us"]] for op, v in h["per_op"].items() if isinstance(v, dict)]
    rows += [["autograd element-wise op, forward", h["per_op"]["autograd_mul_forward_per_op"]],
             ["autograd element-wise op, forward + backward", h["per_op"]["autograd_mul_forward_backward_per_op"]]]
    md.append(table(["one aten call on a tiny tensor", "host us"], rows))
    md.append("\n")
    for run, host in (("", h), (" (second machine)", h2)):
        if not host:
            continue
        rows = [[lbl + run, v.get("host_us_per_layer"), v.get("kernels_per_layer"),
                 v.get("host_us_per_kernel", "-")]
                for lbl, v in list(host["blocks"].items()) + [("fsdp2 " + a, b) for a, b in host["fsdp2"].items()]]
        md.append(table(["Llama block (h 256, 128 tokens), forward + backward", "host us per layer",
                         "kernels per layer", "host us per kernel"], rows))
        md.append("\n")
    if sizes:
        md.append("\nThe same calls issued while a sleep kernel holds the GPU busy, so that the host never "
                  "waits for it (`scripts/measure/measure_host_sizes.py`; host us per call, no autograd; a block: "
                  "one layer's forward and backward, batch 1):\n\n")
        ops = sizes["ops_by_size"]
        names = list(next(iter(ops.values())).keys())
        rows = [[size] + [ops[size][n]["issue_us"] for n in names] for size in ops]
        md.append(table(["tensors"] + names, rows))
        md.append("\n")
        rows = [[lbl, v["issue_us"]] for lbl, v in sizes["blocks_by_size"].items() if isinstance(v, dict)]
        md.append(table(["single Llama block", "host us per step"], rows))
    md.append("\n## A GEMM beside a kernel holding SMs (the NCCL-CTA tail)\n\n")
    rows = [[f"{r['m']}x{r['n']}x{r['k']}", r["held_sms"], r["holder"], r["alone_us"], r["beside_us"],
             r["slowdown"]] for r in s["interference"]["rows"]]
    md.append(table(["GEMM", "SMs held", "holder", "alone (us)", "beside (us)", "slowdown"], rows))
    open(out_path, "w").write("".join(md))


if __name__ == "__main__":
    main(*sys.argv[1:3])
