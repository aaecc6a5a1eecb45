"""A real file system that fills up: a small tmpfs (mounting one needs root / CAP_SYS_ADMIN)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(mount: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `mount` (skips the test where no tmpfs can be mounted)."""
    mount.mkdir(parents=True, exist_ok=True)
    cmd = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)]
    if subprocess.run(cmd, capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN) to fill a real disk")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave_kb: int = 0) -> None:
    """Take all the space of the file system at `mount` but `leave_kb`."""
    (mount / "filler").unlink(missing_ok=True)
    stat = os.statvfs(mount)
    size = stat.f_bavail * stat.f_frsize - leave_kb * 1024
    subprocess.run(["fallocate", "-l", str(size), str(mount / "filler")], check=True)
