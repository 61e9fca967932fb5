"""The benchmark windows by size: the Shockwave artifact's workloads and synthetic resamples of
the largest, each with its cluster, and the busiest window of each (`window_for`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vfm.cluster.windows import BusiestWindow

#: size -> (workload file, or None for a synthetic resample of the 900-job workload; GPUs).
SIZES: dict[int, tuple[str | None, int]] = {
    120: ("shockwave_120jobs_32gpus", 32),
    220: ("shockwave_220jobs_64gpus", 64),
    460: ("shockwave_460jobs_128gpus", 128),
    900: ("shockwave_900jobs_256gpus", 256),
    1800: (None, 512),
    3600: (None, 1024),
}

#: The synthetic sizes resample this workload's jobs with this seed.
SYNTHETIC_BASE, SYNTHETIC_SEED = "shockwave_900jobs_256gpus", 0


def window_for(size: int, rounds: int = 20, activity: str = "equal-share") -> BusiestWindow:
    """The window of `rounds` rounds at the busiest moment of the workload named by `size`."""
    from vfm.cluster.windows import busiest_window, resample
    from vfm.cluster.workload import load_workload

    if size not in SIZES:
        raise ValueError(f"size {size} is not one of {sorted(SIZES)}")
    name, gpus = SIZES[size]
    if name is None:
        arrays = resample(load_workload(SYNTHETIC_BASE).arrays(), size, gpus, seed=SYNTHETIC_SEED)
    else:
        arrays = load_workload(name).arrays()
    return busiest_window(arrays, rounds, activity)
