"""Duration baselines of the vectorised engine: the median duration of each job name's successful runs.

`frame` is a timeline_frame.JobFrame (not imported: that module imports this one).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ci_triage.core.evidence.frame_arrays import MISSING, _segments, _stable_order  # noqa: F401


def _median(values: np.ndarray) -> float:
    """statistics.median: the middle value, or the mean of the two middle values."""
    middle = len(values) // 2
    if len(values) % 2:
        return float(np.partition(values, middle)[middle])
    pair = np.partition(values, (middle - 1, middle))
    return float((pair[middle - 1] + pair[middle]) / 2)


def _baselines(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """timeline.duration_baseline for every job name: median and MAD of successful, non-zero durations."""
    success = frame.conclusions.index("success") if "success" in frame.conclusions else -2
    duration = frame.end - frame.start  # meaningless where a time is missing: masked out below
    # timeline.py skips zero durations.
    done = (frame.conclusion == success) & (frame.start != MISSING) & (frame.end != MISSING) & (duration != 0)
    ticks, names = duration[done], frame.name[done]
    low = int(ticks.min()) if len(ticks) else 0
    width = int(ticks.max()) - low + 1 if len(ticks) else 1
    first_name = int(names.min(initial=0))
    bits = width.bit_length()
    name_bits = (int(names.max(initial=0)) - first_name + 1).bit_length()
    if name_bits + bits <= 63:  # one sort of (name, duration), in an int32 when it fits
        narrow = np.int32 if name_bits + bits <= 31 else np.int64
        key = np.subtract(names, first_name, out=np.empty(len(names), dtype=narrow), casting="unsafe")
        key <<= bits
        key |= np.subtract(ticks, low, out=np.empty(len(ticks), dtype=narrow), casting="unsafe")
        key.sort()
        names = (key >> bits).astype(np.int64) + first_name
        ticks = (key & ((1 << bits) - 1)).astype(np.int64) + low
    else:
        order = np.lexsort((ticks, names))
        names, ticks = names[order], ticks[order]
    seconds = ticks / frame.ticks_per_second  # sorted within each name, as ticks are
    starts, ends = _segments(names)
    if len(starts) > 4096:  # many names: one grouped pass beats a loop of small partitions
        durations = pd.DataFrame({"name": names, "seconds": seconds})
        grouped = durations.groupby("name", sort=True)["seconds"]
        median = grouped.median()
        spread = (durations["seconds"] - grouped.transform("median")).abs().groupby(durations["name"]).median()
        return (median.index.to_numpy(dtype=np.int64), grouped.size().to_numpy(dtype=np.int64),
                median.to_numpy(dtype=np.float64), spread.to_numpy(dtype=np.float64))
    middle = starts + (ends - starts) // 2
    odd = (ends - starts) % 2 == 1
    medians = np.where(odd, seconds[middle], (seconds[np.maximum(middle - 1, 0)] + seconds[middle]) / 2) \
        if len(starts) else np.zeros(0)
    spreads = np.array([_median(np.abs(seconds[a:b] - m)) for a, b, m in zip(starts, ends, medians)],
                       dtype=np.float64)
    return names[starts].astype(np.int64), (ends - starts).astype(np.int64), medians, spreads
