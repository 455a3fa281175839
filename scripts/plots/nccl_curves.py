#!/usr/bin/python3
"""Simulated nccl-tests curves beside published nccl-tests figures, and the error at each one.

usage: nccl_curves.py OUT_DIR PUBLISHED.csv CURVE.json [CURVE.json ...]

CURVE files are `clustersim collective --json` outputs over all GPUs of 1..64 servers. For each
(gpu, op) one plot OUT_DIR/nccl_<gpu>_<op>.png (one line per server count, published points as
stars); OUT_DIR/nccl_tests_comparison.csv lists every published point with the simulated bus
bandwidth at the same size, group and algorithm (auto: NCCL's choice; ring: NCCL_ALGO=Ring).
"""
import csv
import os
import sys

from common import plt, read_csv, read_json, save


def label(size):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 2 ** shift:
            return f"{size // 2 ** shift}{unit}"
    return str(size)


def main(out_dir, published_path, paths):
    curves = {}
    for path in paths:
        r = read_json(path)
        key = (r["gpu"], r["op"], r["algo"], r["gpus"])
        curves[key] = {p["size_bytes"]: p["busbw_gbytes_per_s"] for p in r["results"]}
    published = read_csv(published_path)
    rows = []
    for p in published:
        key = (p["gpu"], p["op"], p["algo"], int(p["gpus"]))
        curve = curves.get(key)
        size = int(p["size_bytes"])
        sim = curve.get(size) if curve else None
        err = (sim / float(p["busbw_gbytes_per_s"]) - 1) * 100 if sim else None
        rows.append({**{k: p[k] for k in ("gpu", "gpus", "op", "algo", "size_bytes", "busbw_gbytes_per_s",
                                          "source")},
                     "simulated_busbw_gbytes_per_s": f"{sim:.1f}" if sim else "not simulated",
                     "error_percent": f"{err:+.1f}" if err is not None else ""})
    with open(os.path.join(out_dir, "nccl_tests_comparison.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    for gpu, op in sorted({(k[0], k[1]) for k in curves}):
        fig, ax = plt.subplots(figsize=(10, 4.6))
        # One colour per GPU count, shared by its curves (auto solid, ring dashed) and by the
        # published points at that count, so that a star reads against its own curve.
        counts = sorted({k[3] for k in curves if (k[0], k[1]) == (gpu, op)} |
                        {int(p["gpus"]) for p in published if (p["gpu"], p["op"]) == (gpu, op)})
        colour = {n: f"C{i % 10}" for i, n in enumerate(counts)}
        for (g, o, algo, gpus), c in sorted(curves.items(), key=lambda kv: (kv[0][2], kv[0][3])):
            if (g, o) != (gpu, op):
                continue
            sizes = sorted(c)
            style = "-" if algo == "auto" else "--"
            ax.plot(sizes, [c[s] for s in sizes], style, color=colour[gpus], marker="o", ms=3,
                    mfc="none", label=f"{gpus // 8} server(s), {gpus} GPUs ({algo})")
        labelled = set()  # one legend entry per (GPUs, algorithm, source), however many points
        for p in published:
            if (p["gpu"], p["op"]) == (gpu, op):
                text = (f"nccl-tests {p['gpus']} GPUs ({p['algo']}): "
                        f"{p['source'].split('github.com/')[-1].split(' ')[0]}")
                ax.plot(int(p["size_bytes"]), float(p["busbw_gbytes_per_s"]), "*", ms=11,
                        color=colour[int(p["gpus"])], mec="black", mew=0.6,
                        label=None if text in labelled else text)
                labelled.add(text)
        ax.set_xscale("log", base=2)
        ticks = [2 ** k for k in range(3, 34, 5)]
        ax.set_xticks(ticks)
        ax.set_xticklabels([label(t) for t in ticks])
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{op} on DGX {gpu.upper()} servers: simulated vs published nccl-tests",
                     fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1))
        save(fig, os.path.join(out_dir, f"nccl_{gpu}_{op}.png"))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
