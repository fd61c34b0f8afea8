"""Draws kite-bench's `peers` figures: `python plot.py FIGURES.json OUT.png`.

Three panels from the JSON the benchmark writes: completions a second at each concurrency
(log scale), the time to the first token each client adds over the raw first byte, and
each client process's peak RSS at each concurrency.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

data = json.load(open(sys.argv[1]))
levels = [str(c) for c in data["levels"]]
clients = data["clients"]
names = [c["name"] for c in clients]
width = 0.8 / max(len(levels), 1)

fig, axes = plt.subplots(1, 3, figsize=(18, 6.5), gridspec_kw={"width_ratios": [3, 2, 3]})
ys = range(len(clients))


def grouped(ax, key, title, log):
    for i, level in enumerate(levels):
        values = [c[key].get(level) or 0 for c in clients]
        offsets = [y + (i - (len(levels) - 1) / 2) * width for y in ys]
        bars = ax.barh(offsets, values, height=width, label=f"{level} at once")
        for bar, v in zip(bars, values):
            if v:
                ax.text(v, bar.get_y() + bar.get_height() / 2, f" {v:,.0f}", va="center",
                        fontsize=7)
    ax.set_yticks(list(ys), names)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best")


grouped(axes[0], "rate", "completions per second (log scale)", True)
added = [c["ttft_added_us"] for c in clients]
bars = axes[1].barh(list(ys), [a or 0 for a in added], color="tab:purple")
for bar, a in zip(bars, added):
    if a is not None:
        axes[1].text(max(a, 0), bar.get_y() + bar.get_height() / 2, f" {a:,.0f} µs",
                     va="center", fontsize=8)
axes[1].set_yticks(list(ys), [""] * len(names))
axes[1].invert_yaxis()
axes[1].set_title("time to first token added, µs\n(p50, one at a time, over the raw first byte)")
grouped(axes[2], "rss_mib", "peak RSS of the client process, MiB", False)
axes[2].set_yticks(list(ys), [""] * len(names))

fig.suptitle("Streamed Chat Completions, the whole client path\n" + data["subtitle"])
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
