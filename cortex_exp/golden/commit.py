"""All or nothing on disk (docs/reliability.md "On disk"): the files of a golden set are written
so that an interrupt at any point leaves the old set or the new one, never a mix.

A write goes in three steps, inside the set's own folder:
1. every new file is written, flushed and synced into `.staging-<pid>-<random>/` (a write in
   progress; an interrupt here leaves the old set untouched, and the next write removes it);
2. that folder is renamed to `.pending/`: one atomic rename, the commit point;
3. each file of `.pending/` is renamed over its old version, then `.pending/` is removed.

A folder that holds a `.pending/` holds the new set: every command that reads or writes a
golden set first finishes step 3 (`finish_pending`), so an interrupt between two renames of
step 3 is completed, never seen. Only `rename(2)` within one folder is needed: no symlink, no
platform call; the folder keeps its path, its other files and its permissions.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from cortex_exp.errors import InputError

STAGING = ".staging-"  # + pid-random: a write in progress (or one that was killed)
PENDING = ".pending"  # a committed write whose files are being moved into place


def ours(name: str) -> bool:
    """Whether a folder entry is this module's own (not a file of the set, nor the user's)."""
    return name == PENDING or name.startswith(STAGING)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def finish_pending(folder: Path, order: Iterable[str] = ()) -> None:
    """Move a committed write's files into place (the ones named in `order` in that order, the
    rest by name); a no-op when nothing is pending. Safe to run by two processes at once."""
    pending = Path(folder) / PENDING
    if not pending.is_dir():
        return
    try:
        names = [entry.name for entry in pending.iterdir()]
        first = [n for n in order if n in names]
        for name in first + sorted(set(names) - set(first)):
            try:
                os.replace(pending / name, Path(folder) / name)
            except FileNotFoundError:
                continue  # another process moved it
        pending.rmdir()
        _fsync(Path(folder))
    except FileNotFoundError:
        return  # another process finished it
    except PermissionError as exc:
        raise InputError(
            f"{folder}: an interrupted write left the golden set's new files in {pending}, and they cannot be "
            f"moved into place ({exc.strerror}: {exc.filename}); run the command again with write access to {folder}"
        ) from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_staging(folder: Path) -> None:
    """Remove the staging folders of writes whose process is gone (killed before the commit)."""
    for entry in Path(folder).iterdir():
        if not entry.name.startswith(STAGING) or entry.is_symlink():
            continue
        pid = entry.name[len(STAGING) :].split("-")[0]
        if not pid.isdigit() or not _alive(int(pid)) or int(pid) == os.getpid():
            shutil.rmtree(entry, ignore_errors=True)


def commit(folder: Path, writers: dict[str, Callable[[Path], None]], order: Iterable[str] = ()) -> None:
    """Replace the files `writers` names in `folder`, all or nothing: each writer writes its file
    at the path it is given (in a staging folder); `order` is the order of the final renames."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    finish_pending(folder, order)
    remove_dead_staging(folder)
    stage = folder / f"{STAGING}{os.getpid()}-{secrets.token_hex(4)}"
    stage.mkdir()
    try:
        for name, write in writers.items():
            write(stage / name)
            _fsync(stage / name)
        _fsync(stage)
        os.rename(stage, folder / PENDING)  # the commit point
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    finish_pending(folder, order)


def write_text(path: Path, text: str) -> None:
    """A new file (never through an existing file or symlink: it must not exist)."""
    with open(path, "x", encoding="utf-8", newline="") as fh:
        fh.write(text)


def replace_file(path: Path, text: str) -> None:
    """`path` replaced by a new file holding `text`, through a temporary file in its folder: never
    written in place, so neither a symlink nor a hard link at `path` is written through."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        write_text(tmp, text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
