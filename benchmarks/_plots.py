"""The figures' shared style: page-sized grids, one look per policy, legends outside the data.

Every plot of ``benchmarks/`` goes through here, so that a policy has the same colour in every
figure, vfm stands out (its own colour, drawn thicker and on top), the legends never cover a
curve, and the fairness references are drawn and named the same way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: A page-wide figure (inches) and the resolution it is written at: 1500 x 900 pixels.
PAGE = (10.0, 6.0)
DPI = 150
#: vfm's colour; no other policy has it.
VFM_COLOUR = "#c0392b"
#: The other policies' colours, in order (a colour-blind-safe set without a red).
COLOURS = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22",
           "#393b79", "#637939")
#: Cycled with the colours once they run out, so that every series stays distinct.
LINESTYLES = ("-", "--", ":", "-.")
#: The prefix of a run under the Shockwave artifact's mechanics (`benchmarks.reproduce.ARTIFACT`).
ARTIFACT = "artifact:"
#: What the two mechanics are called in a legend.
MECHANICS = {"ours": "vfm simulator", "artifact": "Shockwave artifact's simulator"}
#: The policies not picked out in a crowded figure (`highlighted`): thin, grey, under the rest.
OTHER_COLOUR = "#b8b8b8"
OTHER_LOOK: dict[str, Any] = {"color": OTHER_COLOUR, "linewidth": 0.7, "zorder": 1, "linestyle": "-", "alpha": 0.9}
#: How many of the other policies a crowded figure picks out besides vfm's runs.
HIGHLIGHTED = 3
#: The finish-time-fairness threshold: a job is unfair when its rho exceeds it.
UNFAIR_RHO = 1.05


def pyplot() -> Any:
    """`matplotlib.pyplot` on the file-only backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def is_vfm(name: str) -> bool:
    return name.removeprefix(ARTIFACT) == "vfm"


def vfm_first(names: Sequence[str]) -> list[str]:
    """`names` with vfm's runs first (a reader finds them where they look first), the rest in order."""
    return sorted(names, key=lambda name: not is_vfm(name))


def styles(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Line keywords per series: vfm red, thick and on top; a run under the artifact's mechanics
    dashed in its policy's colour; otherwise a colour each, then colour and line style."""
    bases = list(dict.fromkeys(name.removeprefix(ARTIFACT) for name in names if not is_vfm(name)))
    colour = {base: COLOURS[k % len(COLOURS)] for k, base in enumerate(bases)}
    dash = {base: LINESTYLES[(k // len(COLOURS)) % len(LINESTYLES)] for k, base in enumerate(bases)}
    out = {}
    for name in names:
        base, theirs = name.removeprefix(ARTIFACT), name.startswith(ARTIFACT)
        if is_vfm(name):
            out[name] = {"color": VFM_COLOUR, "linewidth": 1.6 if theirs else 2.6, "zorder": 5 if theirs else 6,
                         "linestyle": "--" if theirs else "-"}
        else:
            out[name] = {"color": colour[base], "linewidth": 1.1, "zorder": 2,
                         "linestyle": "--" if theirs else dash[base]}
    return out


def highlighted(names: Sequence[str], worse: Callable[[str], float],
                best: int = HIGHLIGHTED) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Line keywords for a figure of many series: vfm's runs and the `best` others by the figure's
    own measure (lowest `worse` first) in their colours (`styles`, so a policy keeps its colour in
    every figure), the rest thin and grey; and the names picked out, in `names`' order (the only
    ones a legend names, with `other_handle` for the rest)."""
    look = styles(names)
    others = [name for name in names if not is_vfm(name)]
    picked = set(sorted(others, key=worse)[:best])
    for name in others:
        if name not in picked:
            look[name] = dict(OTHER_LOOK)
    return look, [name for name in names if is_vfm(name) or name in picked]


def other_handle(count: int) -> Any:
    """The legend entry of the grey series of `highlighted`."""
    from matplotlib.lines import Line2D

    return Line2D([], [], **{**OTHER_LOOK, "linewidth": 1.5}, label=f"the {count} other runs")


def title_of(workload: str, jobs: int, gpus: int) -> str:
    """"Shockwave 120 jobs / 32 GPUs" for a Shockwave trace (``shockwave_120jobs_32gpus``), else
    "<name>: <jobs> jobs / <gpus> GPUs"."""
    trace = re.fullmatch(r"shockwave_(\d+)jobs_\d+gpus(\[:\d+\])?", workload)
    if trace and trace[2]:  # a slice (--jobs)
        return f"Shockwave {trace[1]}-job trace, first {jobs} jobs / {gpus} GPUs"
    if trace:
        return f"Shockwave {jobs} jobs / {gpus} GPUs"
    return f"{workload}: {jobs} jobs / {gpus} GPUs"


def grid(panels: int, columns: int = 3, size: tuple[float, float] = PAGE) -> tuple[Any, list[Any], list[Any]]:
    """A figure of `panels` axes in rows of `columns`; the axes used and the cells left over (off,
    free for a legend)."""
    plt = pyplot()
    rows = -(-panels // columns)
    figure, axes = plt.subplots(rows, columns, figsize=size, squeeze=False)
    cells = list(axes.flat)
    for spare in cells[panels:]:
        spare.axis("off")
    return figure, cells[:panels], cells[panels:]


def legend_right(axis: Any, **keywords: Any) -> None:
    """The axis's legend outside it, on the right, top-aligned."""
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, **keywords)


def fairness_lines(axis: Any) -> None:
    """The finish-time-fairness references on an axis of rho: equal share and the unfairness threshold."""
    axis.axvline(1.0, color="black", linewidth=0.8, linestyle=":", label=r"equal share, $\rho$ = 1", zorder=1)
    axis.axvline(UNFAIR_RHO, color="black", linewidth=0.8, linestyle="--",
                 label=rf"unfair: $\rho$ > {UNFAIR_RHO:g}", zorder=1)


def save(figure: Any, path: Path) -> Path:
    """Write `figure` to `path` (legends outside the axes included) and close it."""
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    pyplot().close(figure)
    return path
