"""Render ObliviSync benchmark JSON lines (veil bench osync --json) as PNG figures."""
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
out = sys.argv[2]
styles = {3: "-", 6: "--", 9: "-.", 12: ":"}


def save(name, title, xlabel, ylabel):
    plt.title(title)
    plt.xlabel(xlabel)
    plt.ylabel(ylabel)
    plt.grid(alpha=0.3)
    plt.legend()
    plt.tight_layout()
    plt.savefig(f"{out}/{name}", dpi=110)
    plt.close()


# Fig. 4: epochs to sync a fraction of the files, per k.
tp = defaultdict(list)
for r in rows:
    if r["experiment"] == "throughput":
        tp[r["k"]].append((r["fraction_synced"], r["epochs"]))
if tp:
    for k, pts in sorted(tp.items()):
        pts.sort()
        plt.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(k, "-"), marker="o", label=f"k = {k}")
    save("oblivisync-fig4-throughput.png", "Fig. 4: throughput (insert ~90% of N files at once)",
         "fraction of files synced", "epochs")
    for k, pts in sorted(tp.items()):
        ov = [(r["backend_fill"], r["bandwidth_overhead"]) for r in rows
              if r["experiment"] == "throughput" and r["k"] == k]
        ov.sort()
        plt.plot([p[0] for p in ov], [p[1] for p in ov], styles.get(k, "-"), marker="o", label=f"k = {k}")
    plt.axhline(2, color="grey", lw=0.8)
    save("oblivisync-overhead.png", "Bandwidth overhead vs fill (backend bytes / new bytes)",
         "backend fill", "overhead (x)")

# Fig. 5: fixed vs variable.
var = [r for r in rows if r["experiment"] == "variable"]
if var:
    plt.bar([f'{r["kind"]}\n{r["files"]} files' for r in var], [r["epochs"] for r in var], label="epochs to sync all")
    save("oblivisync-fig5-variable.png", "Fig. 5: same bytes, fixed vs lognormal file sizes (k = 3)", "", "epochs")

# Fig. 6: latency vs fill.
lat = defaultdict(list)
for r in rows:
    if r["experiment"] == "latency":
        lat[r["k"]].append((r["fill"], r["mean_epochs"]))
if lat:
    for k, pts in sorted(lat.items()):
        pts.sort()
        plt.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(k, "-"), marker="o", label=f"k = {k}")
    save("oblivisync-fig6-latency.png", "Fig. 6: latency (files written one at a time)", "backend fill", "epochs per file")

# Fig. 7: buffer size quantiles per fill level.
buf = [r for r in rows if r["experiment"] == "buffer"]
if buf:
    qs = ["p20", "p50", "p80", "p95", "max"]
    for r in buf:
        plt.plot(qs, [max(r[q], 1) for q in qs], marker="o", label=f'{int(r["fill"] * 100)}% full')
    plt.yscale("log")
    save("oblivisync-fig7-buffer.png", "Fig. 7: pending buffer size per sync (k = 3)", "quantile", "bytes")
print("plots written to", out)
