"""One open MLflow run (`RunLog`), that ends once and loses nothing (`runs.open_run` makes one).

- Runs are written through `MlflowClient` with explicit run ids (no global "active run").
- `close` ends the run: a run that does not finish gets its `unfinished_tags` (a benchmark run's
  `decides=false`), `end_reason` and a line in its description saying how it ended.
- Everything logged is also kept in a `Journal`. When the store fails mid-run (gone, full), the
  run keeps going into the journal only; at its end the journal is written to the spool folder
  and the run ends with exit 4 naming the spool and the command that logs it later.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import time
import warnings
from pathlib import Path

from cortex_exp import interrupts
from cortex_exp.errors import CortexError, ServiceUnreachable
from cortex_exp.redact import scrub
from cortex_exp.tracking import failures, spool
from cortex_exp.tracking.lifecycle import NOTE

# the tag holding the sha256 of a benchmark run's per_query.jsonl, as logged (compare checks it)
PER_QUERY_DIGEST = "per_query_sha256"

REPLAY = "python -m cortex_exp.tracking replay"


LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"  # MLflow's tag of a run's tables (mlflow.utils.mlflow_tags)


def param_value(value) -> str:
    """A param as its value reads, not as Python writes it: `true`, `null`, `[5, 10]` (JSON) for
    booleans, None, lists and dicts; a string as it is; anything else as `str` gives it."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _say(message: str) -> None:
    print(scrub(message), file=sys.stderr, flush=True)


class RunLog:
    """One open MLflow run, mirrored in a journal."""

    def __init__(self, client, journal: spool.Journal, spool_dir: Path | None, unfinished_tags: dict | None = None):
        self.client = client
        self.journal = journal
        self.spool_dir = spool_dir
        self.unfinished_tags = dict(unfinished_tags or {})
        self.status = "FINISHED"
        self.end_time: int | None = None  # None: when it ends (a replay keeps the original)
        self.failure: failures.Failure | None = None
        self.places: list[str] = []  # local folders the run writes to (its artifacts), to name a full disk

    @property
    def run_id(self) -> str:
        return self.journal.run_id

    def _call(self, method, *args, **kwargs) -> None:
        """One write to the store (a client method's name, or a function that writes), unless it
        already failed; a store failure switches the run to the journal only (spooled), or is
        exit 4 at once for a run without a spool."""
        if self.failure is not None:
            return
        try:
            (method if callable(method) else getattr(self.client, method))(*args, **kwargs)
        except Exception as exc:
            found = failures.classify(self.journal.uri, exc, self.places)
            if found is None:
                raise
            if self.spool_dir is None:
                raise ServiceUnreachable(found.line(self.journal.uri)) from None
            self.failure = found
            self.journal.failure = found.line(self.journal.uri)
            _say(f"WARNING: {self.journal.failure}; the run goes on, its results will be kept in a spool folder")

    def set_tags(self, tags: dict) -> None:
        from mlflow.entities import RunTag

        tags = {k: scrub(str(v)) for k, v in tags.items()}
        self.journal.tags.update(tags)
        self._call("log_batch", self.run_id, tags=[RunTag(k, v) for k, v in tags.items()])

    def log_params(self, params: dict) -> None:
        from mlflow.entities import Param

        items = {k: scrub(param_value(v))[:6000] for k, v in params.items()}
        self.journal.params.update(items)
        batch = [Param(k, v) for k, v in items.items()]
        for i in range(0, len(batch), 100):
            self._call("log_batch", self.run_id, params=batch[i : i + 100])

    def log_metrics(self, metrics: dict[str, float]) -> None:
        now = int(time.time() * 1000)
        self.log_metric_records([[k, float(v), now, 0] for k, v in metrics.items()])

    def log_metric_records(self, records: list[list]) -> None:
        """Metrics as [key, value, timestamp ms, step] (a replay keeps the original times)."""
        from mlflow.entities import Metric

        self.journal.metrics += [list(r) for r in records]
        batch = [Metric(k, float(v), int(t), int(step)) for k, v, t, step in records]
        for i in range(0, len(batch), 500):
            self._call("log_batch", self.run_id, metrics=batch[i : i + 500])

    def log_text(self, name: str, text: str) -> str:
        """The artifact `name` holding `text` (scrubbed of secrets); returns the sha256 of the bytes logged."""
        data = scrub(text).encode("utf-8")
        self._log_data(name, data)  # the bytes written once: a million documents' record is not copied again
        return hashlib.sha256(data).hexdigest()

    def log_json(self, name: str, obj) -> str:
        return self.log_text(name, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")

    def log_jsonl(self, name: str, rows) -> str:
        return self.log_text(name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    def log_file(self, path: Path, artifact_path: str | None = None) -> None:
        path = Path(path)
        self.journal.add_artifact(f"{artifact_path}/{path.name}" if artifact_path else path.name, path.read_bytes())
        self._call("log_artifact", self.run_id, str(path), artifact_path)

    def log_bytes(self, name: str, data: bytes) -> None:
        """An artifact at the path `name` (folders included) from its bytes."""
        self._log_data(name, data)

    def _log_data(self, name: str, data: bytes) -> None:
        rel = spool.safe_path(name)
        self.journal.add_artifact(rel, data)
        self._call(lambda: self._upload(rel, data))  # a full disk under the temporary file: the store's failure

    def _upload(self, rel: str, data: bytes) -> None:
        import tempfile

        folder, _, base = rel.rpartition("/")
        with tempfile.TemporaryDirectory(prefix="cortex_artifact_") as tmp:
            (Path(tmp) / base).write_bytes(data)
            self.client.log_artifact(self.run_id, str(Path(tmp) / base), folder or None)

    def log_table(self, name: str, columns: dict[str, list]) -> str:
        """A table as `mlflow.log_table` logs one — the JSON of a pandas DataFrame in its `split`
        orient, and the tag `mlflow.loggedArtifacts` naming it, which the UI reads to show it as a
        table — through the journal like any artifact; returns the sha256 of the bytes logged."""
        import pandas as pd

        text = pd.DataFrame(columns).to_json(orient="split", index=False, date_format="iso", force_ascii=False)
        digest = self.log_text(name, text)
        tables = json.loads(self.journal.tags.get(LOGGED_ARTIFACTS, "[]"))
        entry = {"path": name, "type": "table"}
        self.set_tags({LOGGED_ARTIFACTS: json.dumps([*tables, entry] if entry not in tables else tables)})
        return digest

    def read(self, fn):
        """What `fn` reads from the store, or None once the store has failed: the run goes on into
        its journal, as after a failed write (`_call`)."""
        found = []
        self._call(lambda: found.append(fn()))
        return found[0] if found else None

    def log_golden_dataset(self, name: str, golden_id: str, folder: Path) -> None:
        """The golden set as an MLflow dataset input whose digest is `golden_id`."""
        self.log_dataset(name, golden_id, Path(folder).resolve().as_uri(), "evaluation")

    def log_dataset(self, name: str, digest: str, source_uri: str, context: str) -> None:
        self.journal.datasets.append({"name": name, "digest": digest, "source": source_uri, "context": context})
        self._call(self._log_inputs, [dataset_input(name, digest, source_uri, context)])

    def _log_inputs(self, inputs: list) -> None:
        """MLflow makes a dataset the first time a run logs it: two runs at once making the same
        one race, and the second's insert breaks a unique constraint (sqlite's IntegrityError,
        PostgreSQL's UniqueViolation). Its retry finds the dataset made and links it."""
        from mlflow.exceptions import MlflowException

        try:
            self.client.log_inputs(self.run_id, datasets=inputs)
        except MlflowException as exc:
            if not any(word in str(exc) for word in ("IntegrityError", "UniqueViolation")):
                raise
            self.client.log_inputs(self.run_id, datasets=inputs)

    def close(self, status: str, exc: BaseException | None) -> None:
        """End the run once; spool it when the store failed (exit 4, unless a signal stops us)."""
        with interrupts.deferred():
            self.journal.status, self.journal.end_time = status, self.end_time or spool.now_ms()
            if status != "FINISHED" and exc is not None:  # (a replay sets its status, and keeps its reason)
                self.set_tags({**self.unfinished_tags, "end_reason": _how(status, exc)})
                self._call("set_tag", self.run_id, NOTE, self._note_with(f"**{status}**: {_how(status, exc)}"))
            with contextlib.redirect_stdout(sys.stderr):  # MLflow prints "View run ... at: <url>" on stdout
                self._call("set_terminated", self.run_id, status, self.journal.end_time)
            if status == "KILLED" and self.failure is None:
                _say(f"run {self.run_id} ({self.journal.name}) marked KILLED ({_how(status, exc)})")
            if self.failure is not None:
                self._spool(exc, self.failure, self._mark_failed(self.failure))

    def _note_with(self, line: str) -> str:
        old = self.journal.tags.get(NOTE, "")
        self.journal.tags[NOTE] = scrub((old.rstrip() + "\n\n" if old else "") + line)
        return self.journal.tags[NOTE]

    def _mark_failed(self, failure: failures.Failure) -> str:
        """A full store may still take the one write that ends the run FAILED (the artifacts'
        disk was full, or the database has a free page): try it; a store that went away is not
        asked again (its run is marked KILLED by the next start, or `replayed_as` by a replay)."""
        if failure.kind != "full":
            return "left RUNNING in the store"
        try:
            self.client.set_tag(self.run_id, "end_reason", f"the tracking store failed: {self.journal.failure}")
            with contextlib.redirect_stdout(sys.stderr):
                self.client.set_terminated(self.run_id, "FAILED")
        except Exception as exc:
            if failures.classify(self.journal.uri, exc, self.places) is None:
                raise
            return "could not be marked FAILED in the full store"
        return "marked FAILED in the store"

    def _spool(self, exc: BaseException | None, failure: failures.Failure, state: str) -> None:
        head = f"{failure.line(self.journal.uri)}; run {self.run_id} ({self.journal.name}) {state}"
        assert self.spool_dir is not None, "a store failure is kept only by a run with a spool folder (_call)"
        try:
            folder = spool.write(self.journal, self.spool_dir)
        except OSError as err:
            message = f"{head}: its results could not be kept either: {err.filename or self.spool_dir}: {err.strerror}"
        else:
            message = f"{head}: its measured results are kept in {folder}; log them later with: {REPLAY} {folder}"
        if exc is not None and not isinstance(exc, CortexError):
            _say(message)  # a signal, or a bug that keeps its own exit code and traceback
            return
        if exc is not None:
            _say(str(exc))  # what stopped the run (a gate), before what became of its record
        raise ServiceUnreachable(message)


def _how(status: str, exc: BaseException | None) -> str:
    if isinstance(exc, interrupts.Interrupted):
        return f"interrupted by {exc.name}"
    if isinstance(exc, KeyboardInterrupt) or status == "KILLED":
        return "interrupted"
    if exc is None:
        return status.lower()
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"{type(exc).__name__}: {first[:300]}"


def dataset_input(name: str, digest: str, source_uri: str, context: str):
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        source = resolve_dataset_source(source_uri)
    dataset = MetaDataset(source, name, digest)  # type: ignore[abstract]  # mlflow's Dataset: abstract profile, no ABCMeta
    return DatasetInput(dataset._to_mlflow_entity(), [InputTag(key="mlflow.data.context", value=context)])
