"""A process's peak resident memory for the benchmarks: VmHWM from /proc (Linux), which, unlike ru_maxrss, can be
reset (`reset_peak_rss`), so that a stage's peak is its own."""

from __future__ import annotations


def peak_rss_mib() -> float:
    """This process's peak RSS in MiB since it started or since the last `reset_peak_rss` (nan off Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def reset_peak_rss() -> None:
    """Sets the peak back to the current RSS (Linux: writing 5 to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


__all__ = ["peak_rss_mib", "reset_peak_rss"]
