#!/usr/bin/env python3
"""Wall time, peak RSS and events per second of `run` and Chakra `replay` against GPUs.

Writes results/scaling.md and results/scaling.png. `run` is the Llama 3 405B step (TP 8, PP 16,
and DP grown with the cluster; 64 GPUs take PP 8 with 4 virtual stages), the Llama 3 8B step at
TP 1 (ZeRO-3, as FSDP runs it), 2, 4 and 8 with DP grown to 1K-98K GPUs of `dgx-h100`, and every
preset as it comes; `replay` (64 to 32,768
ranks, the generator's limit) is the data-parallel Chakra trace of ../shared/chakra-traces/gen_chakra_dp.py (one 64 MiB all-reduce
after 1 ms of compute) on the Llama 3 cluster, written to a temporary folder. Each point is one
timed CLI run on one core.
Usage: scripts/scaling.py [BIN] [GEN]   (defaults: build/clustersim, ../shared/.../gen_chakra_dp.py)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "clustersim")
GEN = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    ROOT, "..", "shared", "chakra-traces", "gen_chakra_dp.py")


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (wall s, peak RSS MB, report JSON)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        start = time.monotonic()
        done = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd + ["--json", out.name],
                              capture_output=True, text=True, check=True)
        wall = time.monotonic() - start
        rss_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
        with open(out.name) as f:
            return wall, rss_mb, json.load(f)


def run_points():
    rows = []
    for gpus, pp, dp in [(64, 8, 1), (1024, 16, 8), (4096, 16, 32), (16384, 16, 128),
                         (98304, 16, 768)]:
        cmd = [BIN, "run", "--preset", "llama3-405b", "--set", f"parallel.pp={pp}",
               "--set", f"parallel.dp={dp}", "--set", f"parallel.global_batch_size={16 * dp}"]
        if pp != 16:
            cmd += ["--set", "parallel.virtual_stages=4"]  # the 32 chunks of layers_per_stage
        wall, rss, r = timed(cmd)
        rows.append((gpus, wall, rss, r["events"], r["iteration_time_s"]))
        print("run", rows[-1], flush=True)
    return rows


def layout_points():
    """llama3-8b at TP 1, 2, 4, 8 (PP 1, DP = GPUs / TP, 2 microbatches a replica) on dgx-h100."""
    rows = {}
    for tp in [1, 2, 4, 8]:
        rows[tp] = []
        for gpus in [1024, 4096, 16384, 98304]:
            dp = gpus // tp
            cmd = [BIN, "run", "--preset", "llama3-8b", "--set", f"parallel.tp={tp}",
                   "--set", f"parallel.dp={dp}", "--set", f"parallel.global_batch_size={2 * dp}",
                   "--set", f"parallel.sequence_parallel={'true' if tp > 1 else 'false'}",
                   "--set", f"parallel.zero_stage={1 if tp > 1 else 3}"]
            wall, rss, r = timed(cmd)
            rows[tp].append((gpus, wall, rss, r["events"], r["iteration_time_s"]))
            print(f"tp{tp}", rows[tp][-1], flush=True)
    return rows


def family_points():
    """The other layout families on 16,384 and 98,304 GPUs: context parallelism and experts."""
    families = [("llama3-70b, TP 8 x CP 2 x PP 4 on dgx-h100", "llama3-70b", 64, 16,
                 ["--set", "parallel.cp=2", "--set", "cluster.topology=dgx-h100"]),
                ("mixtral-8x7b, EP 8 in DP (PP 4)", "mixtral-8x7b", 4, 16, []),
                ("qwen3-30b-a3b, TP 4, EP 8 (PP 1)", "qwen3-30b-a3b", 4, 32, []),
                ("deepseek-v3, EP 64 in DP (PP 16, DualPipe)", "deepseek-v3", 16, 32, [])]
    rows = {}
    for what, preset, gpus_per_dp, microbatches, extra in families:
        rows[what] = []
        for gpus in [16384, 98304]:
            dp = gpus // gpus_per_dp
            wall, rss, r = timed([BIN, "run", "--preset", preset, "--set", f"parallel.dp={dp}",
                                  "--set", f"parallel.global_batch_size={microbatches * dp}",
                                  "--set", f"cluster.num_gpus={gpus}"] + extra)
            rows[what].append((gpus, wall, rss, r["events"], r["iteration_time_s"]))
            print("family", what, rows[what][-1], flush=True)
    return rows


def preset_points():
    rows = []
    listing = subprocess.run([BIN, "presets"], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    # The workload names: the indented lines under the first heading, up to the next one.
    names = []
    for line in listing[1:]:
        if not line.startswith("  "):
            break
        names.append(line.split()[0])
    for name in names:
        wall, rss, r = timed([BIN, "run", "--preset", name])
        rows.append((name, r["gpus"], wall, rss, r["events"], r["iteration_time_s"]))
        print("preset", rows[-1], flush=True)
    return rows


def replay_points():
    rows = []
    # The generator hard-links every rank file to one, and a file takes at most 65,000 links.
    for gpus in [64, 1024, 16384, 32768]:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, GEN, "--npus", str(gpus), "--steps", "1", "--out", d],
                           check=True, capture_output=True)
            wall, rss, r = timed([BIN, "replay", "--chakra", os.path.join(d, "dp"),
                                  "--topology", "llama3-24k"])
        rows.append((gpus, wall, rss, r["events"], r["iteration_time_s"]))
        print("replay", rows[-1], flush=True)
    return rows


def target_points():
    """The issue's targets: (what, wall s, peak RSS MB, goal)."""
    rows = []
    base = [BIN, "run", "--preset", "llama3-405b"]
    for what, extra, goal in [
            ("`run --preset llama3-405b` (16,384 GPUs)", [], "10 s, 1 GB"),
            ("405B, CP 16, 131K tokens (TP 8 CP 16 PP 16 DP 8)",
             ["--set", "parallel.cp=16", "--set", "parallel.dp=8", "--set",
              "model.seq_length=131072", "--set", "parallel.global_batch_size=128"], "60 s"),
            ("405B on 98,304 GPUs (DP 768)",
             ["--set", "parallel.dp=768", "--set", "parallel.global_batch_size=12288"],
             "60 s, 4 GB")]:
        wall, rss, r = timed(base + extra)
        rows.append((what, wall, rss, goal))
        print("target", rows[-1], flush=True)
    for npus, steps, goal in [(16384, 1, "10 s, 2 GB"), (1024, 50, "4 s")]:
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, GEN, "--npus", str(npus), "--steps", str(steps),
                            "--out", d], check=True, capture_output=True)
            wall, rss, r = timed([BIN, "replay", "--chakra", os.path.join(d, "dp"),
                                  "--topology", "llama3-24k"])
        rows.append((f"Chakra DP replay, {npus:,} ranks x {steps} steps", wall, rss, goal))
        print("target", rows[-1], flush=True)
    return rows


def table(title, rows):
    lines = [f"### {title}", "", "| GPUs | wall s | peak RSS MB | events | events/s | step s |",
             "|---|---|---|---|---|---|"]
    for gpus, wall, rss, events, step in rows:
        lines.append(f"| {gpus:,} | {wall:.2f} | {rss:.0f} | {events:,} | {events / wall:,.0f} "
                     f"| {step:.4f} |")
    return lines + [""]


def main():
    run_rows, replay_rows, targets = run_points(), replay_points(), target_points()
    layouts, families, presets = layout_points(), family_points(), preset_points()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    series = [(run_rows, "run llama3-405b"), (replay_rows, "replay Chakra DP")]
    series += [(rows, f"run llama3-8b TP {tp}") for tp, rows in layouts.items()]
    for rows, label in series:
        g = [r[0] for r in rows]
        axes[0].plot(g, [r[1] for r in rows], "o-", label=label)
        axes[1].plot(g, [r[2] for r in rows], "o-", label=label)
        axes[2].plot(g, [r[3] / r[1] for r in rows], "o-", label=label)
    for ax, name in zip(axes, ["wall time (s)", "peak RSS (MB)", "events per second"]):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("GPUs")
        ax.set_title(name)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(ROOT, "results", "scaling.png"), dpi=110)
    text = ["# Scaling: wall time, memory and event rate against GPUs", "",
            "Made by `scripts/scaling.py` (one timed CLI run per point, Release build, one core of "
            "a 2-core machine; wall times are noisy by a few percent). Every abstraction of "
            "`SimulationConfig` is on: fluid collectives, tensor- and data-parallel folding.", "",
            "![scaling](scaling.png)", "",
            "With data-parallel folding a step's events no longer grow with DP (replica 0 "
            "runs; the other replicas' traffic rides beside it as mirrored flows), so past 1,024 "
            "GPUs wall time and memory grow with the cluster instead: its topology, the routes "
            "of every GPU pair that talks, and the links of the mirrored flows. The replay's "
            "rate is low because its few events are whole fluid collectives; reading the rank "
            "files takes about half of its wall time.", "",
            "### Targets", "", "| what | wall s | peak RSS MB | goal |", "|---|---|---|---|"]
    text += [f"| {w} | {t:.2f} | {m:.0f} | {g} |" for w, t, m, g in targets] + [""]
    text += table("`run --preset llama3-405b` (TP 8 x PP 16, DP grown with the cluster; "
                  "64 GPUs: PP 8 x v 4 x DP 1)", run_rows)
    for tp, rows in layouts.items():
        text += table(f"`run --preset llama3-8b` at TP {tp}, PP 1, DP = GPUs / {tp} on "
                      f"`dgx-h100` ({'ZeRO-3, no sequence parallelism' if tp == 1 else 'ZeRO-1'}"
                      ", 2 microbatches a replica)", rows)
    for what, rows in families.items():
        text += table(f"`run --preset` {what}, DP grown with the cluster", rows)
    text += ["### Every preset as it comes", "",
             "| preset | GPUs | wall s | peak RSS MB | events | step s |", "|---|---|---|---|---|---|"]
    text += [f"| {n} | {g:,} | {w:.2f} | {m:.0f} | {e:,} | {t:.4f} |"
             for n, g, w, m, e, t in presets] + [""]
    text += table("`replay --chakra` of `gen_chakra_dp.py --steps 1` on `llama3-24k`", replay_rows)
    with open(os.path.join(ROOT, "results", "scaling.md"), "w") as f:
        f.write("\n".join(text))


if __name__ == "__main__":
    main()
