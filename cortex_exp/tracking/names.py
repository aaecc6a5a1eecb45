"""Runs as a user names them (docs/interface.md §1 "Naming a run"): a run id, a run name, or
`latest:NAME`.

The rule for a name several runs carry: the latest FINISHED run of that name wins, and a note
on stderr names the run used and the others (newest first), so that a user who meant another
one sees its id. `make run`, then the README's own `python -m cortex_exp row=core
retriever=bm25_v2`, leave two runs named `core/bm25_v2`; the tour's next command compares the
latest. `latest:NAME` asks for the same run and prints no note.

A name no FINISHED run carries is exit 2 suggesting the names nearest to it: the names that
begin with it first (a sweep's jobs are named `core/hybrid w=0.5`, and a user types
`core/hybrid`), then the closest spellings.
"""

from __future__ import annotations

import difflib
import logging
import re
import time

from cortex_exp.errors import InputError
from cortex_exp.tracking.reader import FINISHED, NEWEST, Reader

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
DEFAULT_EXPERIMENT = "cortex_exp"
SHOWN = 10  # runs listed in the note
SUGGESTED = 5  # names suggested for a name not found
SEARCHED = 1000  # the latest runs whose names a suggestion is chosen among

_log = logging.getLogger(__name__)


def experiment_scopes(client, experiment: str | None) -> list[list[str]]:
    """Where to look, in order: the named experiment; with no name, `cortex_exp` (if it exists)
    and then every experiment."""
    reader = Reader.of(client)
    if experiment:
        found = reader.experiment_id(experiment)
        if found is None:
            raise InputError(f"--experiment {experiment!r}: no such experiment in this MLflow store")
        return [[found]]
    everything = reader.active_experiments()
    default = reader.experiment_id(DEFAULT_EXPERIMENT)
    return [[default], everything] if default is not None else [everything]


def describe(run) -> str:
    """One line that tells same-named runs apart."""
    tags = run.data.tags
    ms = run.info.start_time
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d} UTC"
    parts = [run.info.run_id, started, f"golden_id {tags.get('golden_id', '?')[:12]}"]
    parts += [f"in multirun {tags['mlflow.parentRunId']}"] if "mlflow.parentRunId" in tags else []
    parts += ["degraded"] if tags.get("degraded") == "true" else []
    return "  ".join(parts)


def note_latest(name: str, runs: list) -> str:
    """The note printed when several FINISHED runs carry `name` (newest first in `runs`)."""
    others = [f"  {describe(r)}" for r in runs[1 : SHOWN + 1]]
    more = [f"  ... and {len(runs) - 1 - SHOWN} more"] if len(runs) - 1 > SHOWN else []
    head = (
        f"note: {len(runs)} FINISHED runs are named {name!r}; using the latest, {describe(runs[0])}; "
        "pass a run id to use another of them (newest first):"
    )
    return "\n".join([head, *others, *more])


def typed(name: str) -> str:
    """A run name as a shell takes it: quoted when it holds white space (`"core/hybrid w=0.5"`)."""
    return f'"{name}"' if re.search(r"\s", name) else name


def nearest(client, scopes: list[list[str]], name: str) -> list[str]:
    """Up to `SUGGESTED` names of FINISHED runs near `name`: those that begin with it (newest
    first), then the closest spellings among the latest `SEARCHED` runs' names."""
    begins: list[str] = []
    recent: list[str] = []
    for scope in scopes:  # LIKE's wildcards (`_`, `%`) in a name match more: `startswith` decides
        prefixed = f"{FINISHED} and attributes.run_name LIKE '{name}%'"
        runs = client.search_runs(scope, prefixed, max_results=SEARCHED, order_by=NEWEST)
        begins += [r.info.run_name for r in runs if (r.info.run_name or "").startswith(name)]
        latest = client.search_runs(scope, FINISHED, max_results=SEARCHED, order_by=NEWEST)
        recent += [r.info.run_name for r in latest if r.info.run_name]
    close = difflib.get_close_matches(name, list(dict.fromkeys(recent)), n=SUGGESTED, cutoff=0.6)
    return list(dict.fromkeys(begins + close))[:SUGGESTED]


def find_run(client, selector: str, experiment: str | None = None):
    """The MLflow run a user means by `selector`: a run id; `latest:NAME` or `NAME`, the latest
    FINISHED run of that name (`NAME` with a note on stderr when several carry it); a name no
    FINISHED run carries is exit 2 with the nearest names."""
    name = selector.removeprefix("latest:")
    asked_latest = name != selector
    if not asked_latest and RUN_ID.match(selector):
        try:
            return client.get_run(selector)
        except Exception as exc:  # MLflow imported only here: a run found by id never needs it
            from mlflow.exceptions import MlflowException

            if not isinstance(exc, MlflowException):
                raise
            # not a run id after all: try it as a run name
    if "'" in name or not name:
        raise InputError(f"run selector {selector!r}: expected a run id, NAME or latest:NAME (no quotes)")
    where = f" in experiment {experiment!r}" if experiment else ""
    reader = Reader.of(client)
    scopes = experiment_scopes(reader, experiment)
    for scope in scopes:
        runs = reader.finished_named(scope, name, 1 if asked_latest else SEARCHED)
        if runs:
            if len(runs) > 1 and not asked_latest:
                _log.warning(note_latest(name, runs))
            return runs[0]
    suggestions = nearest(client, scopes, name)
    hint = "the nearest names that exist:" if suggestions else "pass a run id, or a run name such as core/bm25_v2"
    raise InputError(
        f"run selector {selector!r}: no FINISHED run named {name!r}{where}; {hint}", [typed(s) for s in suggestions]
    )
