"""Where the CPU went during a load run: cores used by the app's workers, MariaDB, Redis, the
load generator, the whole machine and so everything else, read from /proc (Linux) and
getrusage. "other" shows when something outside the benchmark disturbed a run."""

import os
import resource
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def process_seconds(pid: int) -> float:
    """User + system CPU seconds of one process (all its threads); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle (all cores), from /proc/stat."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / TICKS


def children(pid: int) -> list[int]:
    pids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            pids += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return pids


class CpuMeter:
    """Snapshot CPU seconds before and after a run; `cores()` is the average cores used."""

    def __init__(self, *, app_master: int | None, redis_pid: int | None, mariadb_pid: int | None):
        self.groups = {
            "app": ([app_master] + children(app_master)) if app_master else [],
            # The bench's own server: every mariadbd on a shared machine (other engineers'
            # private servers too) would count their work as the bench's.
            "mariadb": [mariadb_pid] if mariadb_pid else [],
            "redis": [redis_pid] if redis_pid else [],
        }

    def snapshot(self) -> dict[str, float]:
        seconds = {
            group: sum(process_seconds(pid) for pid in pids) for group, pids in self.groups.items()
        }
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for children: the loader
        seconds["load_generator"] = usage.ru_utime + usage.ru_stime
        seconds["machine"] = machine_busy_seconds()
        return seconds

    @staticmethod
    def cores(
        before: dict[str, float], after: dict[str, float], wall_seconds: float
    ) -> dict[str, float]:
        if wall_seconds <= 0:
            return {}
        cores = {group: (after[group] - before[group]) / wall_seconds for group in after}
        # Whatever else ran meanwhile (other users of the machine, the kernel, this process).
        cores["other"] = cores["machine"] - sum(v for k, v in cores.items() if k != "machine")
        return {group: round(value, 2) for group, value in cores.items()}
