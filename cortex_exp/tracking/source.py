"""Which code made a run: MLflow's standard source, user and git tags, the package version, and
which process on which host runs it (so that a run left RUNNING by a dead process can be found).

The git tags describe the checkout the `cortex_exp` package is imported from (not the working
directory, which may be any folder); an installed package outside a checkout has none.
"""

from __future__ import annotations

import functools
import getpass
import os
import socket
import sys
from pathlib import Path

import cortex_exp

PACKAGE_DIR = Path(cortex_exp.__file__).resolve().parent


@functools.cache
def _git_tags() -> dict[str, str]:
    from mlflow.utils.git_utils import get_git_branch, get_git_commit, get_git_repo_url

    where = str(PACKAGE_DIR)
    commit = get_git_commit(where)
    if not commit:
        return {}
    tags = {"mlflow.source.git.commit": commit}
    branch, url = get_git_branch(where), get_git_repo_url(where)
    if branch:
        tags["mlflow.source.git.branch"] = branch
    if url:
        tags["mlflow.source.git.repoURL"] = url
    dirty = _dirty(where)
    if dirty is not None:
        tags["git_dirty"] = str(dirty).lower()
    return tags


def _dirty(where: str) -> bool | None:
    """Uncommitted changes to the package's own files (None: cannot tell)."""
    try:
        import git
    except ImportError:  # GitPython comes with mlflow; without it the tag is absent
        return None
    try:
        repo = git.Repo(where, search_parent_directories=True)
        return repo.is_dirty(untracked_files=True, path=where)
    except (git.exc.GitError, OSError, ValueError):  # no git binary, not a checkout
        return None


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def source_tags(entry: str) -> dict[str, str]:
    """`mlflow.source.*`, `mlflow.user`, git, `cortex_exp.version`; `entry` names the command
    (e.g. `cortex_exp`, `cortex_exp.compare`), shown in the UI's Source column."""
    return {
        "mlflow.source.type": "LOCAL",
        "mlflow.source.name": f"python -m {entry}",
        "mlflow.user": _user(),
        "cortex_exp.version": cortex_exp.__version__,
        "python_version": sys.version.split()[0],
        **_git_tags(),
    }


def process_tags() -> dict[str, str]:
    """`host` and `pid` of the process that writes the run (docs/interface.md §6)."""
    return {"host": socket.gethostname(), "pid": str(os.getpid())}
