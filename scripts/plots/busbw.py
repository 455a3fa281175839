#!/usr/bin/python3
"""Bus bandwidth vs message size, nccl-tests style, from `clustersim collective --json` files.

usage: busbw.py OUT.png COLLECTIVE.json [COLLECTIVE.json ...]
"""
import sys

from common import plt, read_json, save


def main(out, paths):
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    topo = set()
    styles = ["o-", "s--", "^-", "D:", "v-.", "x-"]
    for i, path in enumerate(paths):
        r = read_json(path)
        topo.add(f"{r['groups']} group(s) of {r['group_size']} {r['gpu'].upper()} on "
                 f"{r['topology']}, {r['network'].replace('_', '-')} network")
        sizes = [p["size_bytes"] for p in r["results"]]
        ax.plot(sizes, [p["busbw_gbytes_per_s"] for p in r["results"]], styles[i % len(styles)], ms=4,
                mfc="none",
                label=f"{r['op']} ({r['algo']})")
    ax.set_xscale("log", base=2)
    ticks = [2 ** k for k in range(10, 31, 4)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t // 2**30}G" if t >= 2**30 else f"{t // 2**20}M" if t >= 2**20
                        else f"{t // 2**10}K" for t in ticks])
    ax.set_xlabel("message size (bytes per rank)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("\n".join(sorted(topo)), fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    save(fig, out)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
