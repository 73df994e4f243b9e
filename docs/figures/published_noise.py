"""Draw docs/figures/published_noise.svg: Ferreira et al. (SC08) and Hoefler et al. (SC10)
recomputed by `simulate`, `simulate --model loggopsim` and LogGOPSim itself (built from
../shared/peers in a temporary directory; left out, with a note, where it cannot be built).

    .venv/bin/python docs/figures/published_noise.py [--hosts 8,64,512,4096,10000]

About 20 minutes on the shared 2-CPU machine; LogGOPSim and --model loggopsim run up to
--peer-hosts (4,096), `simulate` to 10,000.  Points already in published_noise.json are kept.
What is compared: tests/support/published_noise.py."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from jitterscope import plotting  # noqa: E402
from tests.support import loggopsim as lg  # noqa: E402
from tests.support import published_noise as pub  # noqa: E402

STYLES = {"simulate": "-", "simulate --model loggopsim": "--", "LogGOPSim": ":"}
MARKERS = {"simulate": "o", "simulate --model loggopsim": "s", "LogGOPSim": "^"}
COLORS = {"25 us every 1 ms": "tab:blue", "2.5 ms every 100 ms": "tab:red"}


def _save(points: list[pub.Point], path: Path) -> None:
    rows = [dict(q.__dict__, slowdown=q.slowdown, barrier_ratio=q.barrier_ratio) for q in points]
    path.write_text(json.dumps(rows, indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="8,64,512,4096,10000")
    ap.add_argument(
        "--peer-hosts", type=int, default=4096, help="largest P for LogGOPSim and --model loggopsim (minutes above)"
    )
    ap.add_argument("--out", default=str(HERE / "published_noise.svg"))
    args = ap.parse_args()
    hosts = [int(h) for h in args.hosts.split(",")]
    saved = Path(args.out).with_suffix(".json")
    # points already in the JSON are kept (an interrupted run goes on where it stopped)
    points = [
        pub.Point(**{k: d[k] for k in ("experiment", "tool", "signature", "hosts", "runtime_s")})
        for d in (json.loads(saved.read_text()) if saved.exists() else [])
    ]

    def have(exp: str, tool: str, sig: str, p: int) -> bool:
        return any((q.experiment, q.tool, q.signature, q.hosts) == (exp, tool, sig, p) for q in points)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            sim = lg.build(work)
        except lg.Unavailable as err:
            print(f"note: LogGOPSim left out: {err}", file=sys.stderr)
            sim = None
        for exp in (pub.SC08, pub.SC10):
            for p in hosts:
                peers = p <= args.peer_hosts
                work_ns = int(pub.WORK_S[exp] * 1e9)
                need = peers and sim and not all(have(exp, "LogGOPSim", sig, p) for sig in pub.SIGNATURES)
                schedule = sim.schedule(p, pub.PHASES, work_ns, work / "bsp.bin") if need and sim else None
                for sig in pub.SIGNATURES:
                    new = []
                    if not have(exp, "simulate", sig, p):
                        new.append(pub.simulate_default(exp, sig, p))
                    if peers and not have(exp, "simulate --model loggopsim", sig, p):
                        new.append(pub.simulate_loggop(exp, sig, p))
                    if schedule and sim and not have(exp, "LogGOPSim", sig, p):
                        new.append(pub.loggopsim_point(sim, schedule, exp, sig, p, work))
                    for q in new:
                        print(
                            f"{exp} {q.tool:27s} {sig:20s} {p:>7,} hosts: {q.runtime_s * 1e3:9.3f} ms  "
                            f"slowdown {q.slowdown:9.2%}  barrier x{q.barrier_ratio:6.2f}",
                            flush=True,
                        )
                    points += new
                    _save(points, saved)
                if schedule:
                    schedule.unlink()
    plt = plotting.pyplot()
    with plt.rc_context(plotting.STYLE):
        fig, (a, b) = plt.subplots(1, 2, figsize=(9.5, 4))
        for tool in STYLES:
            for sig in pub.SIGNATURES:
                for exp, ax in ((pub.SC08, a), (pub.SC10, b)):
                    pts = sorted(
                        (q for q in points if q.experiment == exp and q.tool == tool and q.signature == sig),
                        key=lambda q: q.hosts,
                    )
                    if not pts:
                        continue
                    y = [100 * q.slowdown for q in pts] if exp == pub.SC08 else [q.barrier_ratio for q in pts]
                    ax.plot(
                        [q.hosts for q in pts],
                        y,
                        ls=STYLES[tool],
                        marker=MARKERS[tool],
                        color=COLORS[sig],
                        ms=4,
                        label=f"{sig}, {tool}",
                    )
        a.set(
            xscale="log",
            yscale="log",
            xlabel="hosts",
            ylabel="slowdown (%)",
            title="SC08: 2.5% noise, 100 x (1 ms + barrier)",
        )
        b.axhline(2, color="gray", lw=0.8)
        b.set(
            xscale="log",
            yscale="log",
            xlabel="hosts",
            ylabel="barrier time / noise-free",
            title="SC10: 100 barriers; noise dominates above 2",
        )
        a.legend(fontsize=6.5, loc="upper left")
        fig.tight_layout()
        plotting.save(fig, args.out)
    _save(points, saved)
    for tool in STYLES:
        for sig in pub.SIGNATURES:
            scale = pub.dominance_scale(
                [q for q in points if q.experiment == pub.SC10 and q.tool == tool and q.signature == sig]
            )
            print(f"SC10: noise dominates the barrier from {scale} hosts: {sig}, {tool}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
