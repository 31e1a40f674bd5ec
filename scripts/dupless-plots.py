"""Render `veil bench dupless --json` (and bench_compare.py --json) as PNG figures."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out = sys.argv[1]
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]

# Fig. 5: where the time of one 1 MB put goes.
f5 = [r for r in rows if r["experiment"] == "fig5" and r["what"] != "total"]
total = next(r["ms"] for r in rows if r["experiment"] == "fig5" and r["what"] == "total")
plt.figure(figsize=(6, 3.2))
left = 0
for r in f5:
    plt.barh(["veil put, 1 MiB"], [r["ms"]], left=[left], label=f'{r["what"]} {r["ms"]:.1f} ms')
    left += r["ms"]
plt.title(f"Fig. 5: time of one 1 MiB put (total {total:.1f} ms, loopback)")
plt.xlabel("ms")
plt.legend(fontsize=8, loc="lower right")
plt.tight_layout()
plt.savefig(f"{out}/dupless-fig5-breakdown.png", dpi=110)
plt.close()

# Figs. 6-7: put and get vs the plain operation, by size.
for op in ("put", "get"):
    rs = [r for r in rows if r["experiment"] == "fig6-7" and r["what"] == op]
    sizes = [r["size"] for r in rs]
    plt.figure(figsize=(6, 3.5))
    plt.plot(sizes, [r["ms"] for r in rs], "o-", label=f"veil {op}")
    plt.plot(sizes, [r["plain_ms"] for r in rs], "s--", label=f"plain {op}, same service")
    for r in rs:
        plt.annotate(f'{r["ratio"]:.2f}x', (r["size"], r["ms"]), fontsize=7, xytext=(3, 4), textcoords="offset points")
    plt.xscale("log", base=2)
    plt.yscale("log")
    plt.xlabel("file size (bytes)")
    plt.ylabel("median ms")
    plt.title(f"Figs. 6-7: {op} time vs a plain {op} (ratio annotated)")
    plt.grid(alpha=0.3)
    plt.legend()
    plt.tight_layout()
    plt.savefig(f"{out}/dupless-fig67-{op}.png", dpi=110)
    plt.close()

# Comparison with restic and rclone crypt.
if len(sys.argv) > 3:
    cmp = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    wls = sorted({r["workload"] for r in cmp})
    tools = ["veil", "restic", "rclone crypt"]
    w = 0.25
    for i, t in enumerate(tools):
        xs = [wls.index(r["workload"]) + (i - 1) * w for r in cmp if r["tool"] == t]
        ax1.bar(xs, [r["total_seconds"] for r in cmp if r["tool"] == t], w, label=t)
        ax2.bar(xs, [r["stored_bytes"] / 2**20 for r in cmp if r["tool"] == t], w, label=t)
    for ax, title in ((ax1, "wall time (s), all users"), (ax2, "stored on disk (MiB)")):
        ax.set_xticks(range(len(wls)), [f"workload {x}" for x in wls])
        ax.set_title(title)
        ax.grid(alpha=0.3, axis="y")
    ax1.legend()
    plt.tight_layout()
    plt.savefig(f"{out}/dupless-compare.png", dpi=110)
    plt.close()
