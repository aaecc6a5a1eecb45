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
platform call; the folder keeps its path, its other files and its permissions. A `.pending` that
is not what step 2 makes — a symlink, a file, a folder holding anything but plain files — is
refused before anything moves (`check_journal`): it is not ours to finish.

A full disk (`FULL_ERRNOS`) while a set is written is exit 4, `GOLDEN STORE FULL: no space left
on device writing <path>` (`DiskFull`), the staging folder removed: the old set, or none.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cortex_exp.errors import InputError, ServiceUnreachable

STAGING = ".staging-"  # + pid-random: a write in progress (or one that was killed)
PENDING = ".pending"  # a committed write whose files are being moved into place
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # no room left where a file is written


class DiskFull(ServiceUnreachable):
    """No space left on the device a golden command writes to (exit 4; docs/interface.md §5)."""


def disk_full(exc: BaseException, where: Path | str) -> DiskFull | None:
    """`exc` as `DiskFull` naming `where` (the file or folder being written) when it is a full
    disk, else None."""
    if not isinstance(exc, OSError) or exc.errno not in FULL_ERRNOS:
        return None
    return DiskFull(
        f"GOLDEN STORE FULL: no space left on device writing {where} ({exc.strerror}); "
        "nothing was half-written: what was there before is as it was"
    )


def ours(name: str) -> bool:
    """Whether a folder entry is this module's own (not a file of the set, nor the user's)."""
    return name == PENDING or name.startswith(STAGING)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_journal(folder: Path) -> bool:
    """Whether `folder` holds a committed write to finish. A `.pending` that is a symlink, not a
    folder, or holds anything but plain files (a symlink, a folder) is refused (`InputError`)
    before anything is moved: finishing it would move files out of another folder."""
    pending = Path(folder) / PENDING
    try:
        mode = os.lstat(pending).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
        what = f"a symlink to {os.readlink(pending)}" if stat.S_ISLNK(mode) else "not a folder"
        raise InputError(
            f"{pending}: is {what}, not the journal of an interrupted write of this golden set; nothing was "
            f"moved (remove it if it is not yours, then run the command again)"
        )
    with os.scandir(pending) as entries:
        odd = [e.name for e in entries if e.is_symlink() or not e.is_file(follow_symlinks=False)]
    if odd:
        raise InputError(
            f"{pending}: holds {', '.join(sorted(odd))}, which is not a plain file of a golden set (a symlink or a "
            "folder); nothing was moved (remove it, then run the command again)"
        )
    return True


def finish_pending(folder: Path, order: Iterable[str] = ()) -> None:
    """Move a committed write's files into place (the ones named in `order` in that order, the
    rest by name); a no-op when nothing is pending. Safe to run by two processes at once."""
    pending = Path(folder) / PENDING
    try:
        if not check_journal(folder):
            return
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
    at the path it is given (in a staging folder); `order` is the order of the final renames.
    A full disk is `DiskFull` naming the file, with nothing left behind (the folders this call
    created are removed again)."""
    folder = Path(folder)
    with new_folders(folder):
        finish_pending(folder, order)
        remove_dead_staging(folder)
        stage = folder / f"{STAGING}{os.getpid()}-{secrets.token_hex(4)}"
        where = folder
        try:
            stage.mkdir()
            for name, write in writers.items():
                where = folder / name
                write(stage / name)
                _fsync(stage / name)
            where = folder
            _fsync(stage)
            os.rename(stage, folder / PENDING)  # the commit point
        except BaseException as exc:
            shutil.rmtree(stage, ignore_errors=True)
            full = disk_full(exc, where)
            if full is not None:
                raise full from None
            raise
    finish_pending(folder, order)


@contextmanager
def new_folders(folder: Path) -> Iterator[None]:
    """`folder` made with its missing parents; when the body raises, the folders made here are
    removed again (those left empty): a failed write leaves no trace of itself."""
    missing, path = [], Path(folder)
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    Path(folder).mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        for made in missing:  # the deepest first
            try:
                made.rmdir()
            except OSError:
                break  # not empty: another writer's, or the user's
        raise


def write_text(path: Path, text: str) -> None:
    """A new file (never through an existing file or symlink: it must not exist)."""
    with open(path, "x", encoding="utf-8", newline="") as fh:
        fh.write(text)


def replace_file(path: Path, text: str) -> None:
    """`path` replaced by a new file holding `text`, through a temporary file in its folder: never
    written in place, so neither a symlink nor a hard link at `path` is written through. A full
    disk is `DiskFull` naming `path`, the old file as it was."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        write_text(tmp, text)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        full = disk_full(exc, path)
        if full is not None:
            raise full from None
        raise
