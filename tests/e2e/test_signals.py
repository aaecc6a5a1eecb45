"""Every run ends (docs/interface.md §5): SIGINT or SIGTERM at 24 moments of real runs — single
runs, multiruns, the joblib launcher — ends the process with 130 or 143, no traceback, and leaves
no run RUNNING: the run and a multirun's parent say KILLED, and no run that did not finish says
`decides=true`.

Most moments are hit exactly with a drill (`CORTEX_DRILL_SIGNAL=<point>:<signal>`: the process
sends itself that real signal when it passes the named point, e.g. inside the creation of the
MLflow run); the rest are sent from outside when the run prints a line, as a user's Ctrl-C (to the
whole process group) or a `kill` would be; two of them with a drill point as the latest moment the
signal may land (`<point>:STOP`: the process stops itself there if it gets that far first, and is
continued once the signal is sent), so that it never lands after the tiny run has ended.
"""

from __future__ import annotations

import signal
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.lifecycle import Launch, data_args, migrated_store, store_from, store_runs, tiny_dataset

INT, TERM = signal.SIGINT, signal.SIGTERM
ROWS = ["-m", "row=core,graph"]
JOBLIB = [*ROWS, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
# (case, mode args, drill point, signal, trigger line, to the group, landing at the latest at)
CASES = [
    ("before composing", [], "job.start", INT, None, False, None),
    ("loading data", [], "bench.start", TERM, None, False, None),
    ("after the probe, no run yet", [], "bench.probed", INT, None, False, None),
    ("inside the run's creation", [], "run.create", TERM, None, False, None),
    ("the run just created", [], "run.created", INT, None, False, None),
    ("ranking inside the run", [], "bench.ranked", TERM, None, False, None),
    ("logging the results", [], "record.metrics", INT, None, False, None),
    ("decides set, run not ended", [], "bench.logged", TERM, None, False, None),
    ("run ended, id not printed", [], "job.end", INT, None, False, None),
    ("kill while indexing", [], None, TERM, "indexed lexical", False, "bench.probed"),
    ("Ctrl-C while ranking", [], None, INT, "ranked 2 queries", True, "bench.logged"),
    ("multirun parent being created", ROWS, "multirun.create", TERM, None, False, None),
    ("multirun parent just created", ROWS, "multirun.created", INT, None, False, None),
    ("between two jobs", ROWS, "job.start@2", TERM, None, False, None),
    ("second job's run being created", ROWS, "run.create@2", INT, None, False, None),
    ("multirun's end begins", ROWS, "multirun.end", TERM, None, False, None),
    ("multirun parent being closed", ROWS, "multirun.close", INT, None, False, None),
    ("multirun closed, exiting", ROWS, "multirun.closed", TERM, None, False, None),
    ("joblib: parent just created", JOBLIB, "multirun.created", TERM, None, False, None),
    ("joblib: each worker inside its run", JOBLIB, "run.created", TERM, None, False, None),
    ("joblib: multirun's end", JOBLIB, "multirun.end", INT, None, False, None),
    ("joblib: parent being closed", JOBLIB, "multirun.close", TERM, None, False, None),
    ("joblib: kill the main while a worker ranks", JOBLIB, None, TERM, "ranked 2 queries", False, None),
    ("joblib: Ctrl-C to the group while workers run", JOBLIB, None, INT, "ranked 2 queries", True, None),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return tiny_dataset(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return migrated_store(tmp_path_factory.mktemp("store"))


def run_case(case, data, template, tmp) -> tuple[str, list[str], int]:
    """Run one case on its own copy of an existing store; the problems found, and how many runs
    the store holds."""
    name, mode, drill, sig, trigger, group, stop_at = case
    uri = store_from(template, tmp)
    env = {"CORTEX_CACHE_DIR": str(tmp / "cache"), "CORTEX_SPOOL_DIR": str(tmp / "spool")}
    if drill:
        env["CORTEX_DRILL_SIGNAL"] = f"{drill}:{signal.Signals(sig).name[3:]}"
    args = ["cortex_exp", *mode, *data_args(data, uri), f"hydra.sweep.dir={tmp}/sweep", f"hydra.run.dir={tmp}/out"]
    done = Launch(args, tmp, env, trigger, sig, group, stop_at).run()
    problems = []
    if done.code != 128 + sig:
        problems.append(f"exit {done.code}, expected {128 + sig}; stderr: {done.stderr[-800:]}")
    if "Traceback" in done.stderr:
        problems.append("a traceback on stderr: " + done.stderr[done.stderr.index("Traceback") :][:1500])
    if trigger and not done.signalled:
        problems.append(f"the line {trigger!r} never came")
    runs = store_runs(uri)
    for run in runs:
        status, tags = run.info.status, run.data.tags
        if status == "RUNNING":
            problems.append(f"run {run.info.run_name} left RUNNING")
        if status != "FINISHED" and tags.get("decides") == "true":
            problems.append(f"run {run.info.run_name} is {status} with decides=true")
        if status == "KILLED" and "interrupted" not in tags.get("end_reason", ""):
            problems.append(f"run {run.info.run_name} KILLED without saying why: {tags.get('end_reason')!r}")
    return name, problems, len(runs)


def test_sigint_and_sigterm_at_24_moments_leave_no_run_running(data, template, tmp_path):
    assert len(CASES) >= 20
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(run_case, case, data, template, tmp_path / f"case{i}") for i, case in enumerate(CASES)]
        results = [f.result() for f in futures]
    failed = {name: problems for name, problems, _ in results if problems}
    assert not failed, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failed.items())
    # the cases inside a run really had one to end (the ones before it, none; the store existed)
    counts = {name: n for name, _, n in results}
    assert counts["after the probe, no run yet"] == 0 and counts["kill while indexing"] == 0
    assert counts["inside the run's creation"] == 1 and counts["multirun parent being created"] == 1
    assert counts["second job's run being created"] == 3  # the parent and both jobs
