"""Where the tests' throw-away files go: a RAM file system (tmpfs, /dev/shm) when the machine has
one with room, else the system's temporary folder.

Nearly every test writes an MLflow sqlite store, and sqlite ends each commit with an fsync: 16 to
19 ms on this machine's disk against 0.07 ms on tmpfs (a commit loop measured on both), and a
run logs dozens of commits — 1,452 fdatasync calls for the five tests of
tests/e2e/test_decisions_demo.py alone. Nothing the tests check depends on a write reaching the
disk (a killed process's writes are the kernel's either way; the full-disk tests mount a small
tmpfs of their own), so the waits were pure idle. `TMPDIR` set by the user is kept."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

RAM = Path("/dev/shm")
ROOM = 6 * 2**30  # a whole session writes about 0.8 GB; pytest keeps its last three sessions


def is_tmpfs(path: Path) -> bool:
    """`path` is the mount point of a tmpfs (/proc/mounts)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(f.split()[1:3] == [str(path), "tmpfs"] for f in mounts if len(f.split()) > 2)


def use_ram_when_there_is_room() -> None:
    """Point `TMPDIR` (this process's and every process it starts: the commands, servers,
    PostgreSQL, Ray, Chromium) at the RAM file system, and pytest's temporary folders with it."""
    if "TMPDIR" in os.environ or not is_tmpfs(RAM) or shutil.disk_usage(RAM).free < ROOM:
        return
    os.environ["TMPDIR"] = str(RAM)
    tempfile.tempdir = None  # recomputed from TMPDIR on its next use
