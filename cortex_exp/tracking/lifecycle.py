"""Runs that always end: a run left RUNNING by a process of this host that is gone (killed with
SIGKILL, power lost) is marked KILLED by the next run that starts, and says so in its tags and
its description (docs/interface.md §6 `host`, `pid`, `end_reason`)."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

NOTE = "mlflow.note.content"


def _process_start(pid: int) -> tuple[str, float] | None:
    """(state, start time in epoch seconds) of a Linux process from /proc; None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 3, starttime 22
        btime = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line[:5] == "btime"
        )
        return fields[0], btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def process_alive(pid: int, since_ms: int) -> bool:
    """Whether process `pid` still runs and is the one that was alive at `since_ms` (a pid reused
    by a younger process, or a zombie, is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    found = _process_start(pid)
    if found is None:
        return True
    state, started = found
    return state not in ("Z", "X") and started <= since_ms / 1000 + 2


def append_note(client, run_id: str, text: str, first: bool = False) -> None:
    """Add a paragraph to a run's description (the MLflow note): at its end, or `first`."""
    old = client.get_run(run_id).data.tags.get(NOTE, "").strip()
    parts = [text, old] if first else [old, text]
    client.set_tag(run_id, NOTE, "\n\n".join(p for p in parts if p))


def mark_orphans(client, experiment_id: str) -> list[str]:
    """End KILLED every RUNNING run of this host whose process is gone; one WARNING line each."""
    host = socket.gethostname()
    runs = client.search_runs(
        [experiment_id], filter_string=f"attributes.status = 'RUNNING' and tags.host = '{host}'", max_results=1000
    )
    lines = []
    for run in runs:
        pid = run.data.tags.get("pid", "")
        if not pid.isdigit() or int(pid) == os.getpid() or process_alive(int(pid), run.info.start_time):
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        reason = f"process {pid} on {host} was gone at {when}; the run was left RUNNING and is marked KILLED"
        client.set_tag(run.info.run_id, "end_reason", reason)
        append_note(client, run.info.run_id, f"**KILLED**: {reason} by the next run that started on this host.")
        client.set_terminated(run.info.run_id, "KILLED")
        lines.append(f"WARNING: ORPHANED RUN: run {run.info.run_id} ({run.info.run_name}): {reason}")
    return lines
