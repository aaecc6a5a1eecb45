"""Judges in MLflow (issue 32; docs/unjudged.md "Judge").

A judge is a run `kind=judge` (`python -m cortex_exp.judge train`): its model as `judge.json`
(the digest tag `judge_digest` is the file's sha256: the judge's identity), its out-of-fold
scores as `out_of_fold.jsonl` (the pairs it learned from, tag `out_of_fold_sha256`), tags
`golden_id` and `golden_path`, the agreement figures as metrics, the golden set as a dataset
input (context `training`). Its run id is the judge's id. Reading one back returns the files'
bytes as stored; the judge layer checks them against their digests.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from cortex_exp import tracking
from cortex_exp.errors import InputError
from cortex_exp.tracking.fetch import _read_artifact
from cortex_exp.tracking.runs import guard
from cortex_exp.tracking.store import client as store_client

KIND = "judge"
MODEL_FILE = "judge.json"
OUT_OF_FOLD_FILE = "out_of_fold.jsonl"
DIGEST = "judge_digest"
OUT_OF_FOLD_DIGEST = "out_of_fold_sha256"


@dataclass(frozen=True)
class JudgeRun:
    judge_id: str
    tags: dict[str, str]
    model: bytes
    out_of_fold: bytes | None


def log_judge(
    uri: str,
    experiment: str,
    name: str,
    *,
    model: bytes,
    out_of_fold: bytes,
    golden_id: str,
    golden_path: Path,
    tags: dict[str, str],
    params: dict,
    metrics: dict[str, float],
    note: str,
) -> str:
    """The judge's run; its id is the judge's id."""
    all_tags = {
        "kind": KIND,
        DIGEST: hashlib.sha256(model).hexdigest(),
        OUT_OF_FOLD_DIGEST: hashlib.sha256(out_of_fold).hexdigest(),
        "golden_id": golden_id,
        "golden_path": str(Path(golden_path).resolve()),
        **tags,
        tracking.NOTE: note,
    }
    with tracking.open_run(uri, experiment, name, all_tags, entry="cortex_exp.judge") as log:
        log.log_params(params)
        log.log_metrics(metrics)
        log.log_bytes(MODEL_FILE, model)  # bytes as given (never scrubbed): the digest is of this file
        log.log_bytes(OUT_OF_FOLD_FILE, out_of_fold)
        log.log_dataset("golden", golden_id, Path(golden_path).resolve().as_uri(), "training")
        return log.run_id


def read_judge(uri: str, judge_id: str) -> JudgeRun:
    """The judge run `judge_id` and its files; exit 2 when there is no such run, it is not a
    judge or it holds no model."""
    from mlflow.exceptions import MlflowException

    with guard(uri):
        c = store_client(uri)
        try:
            run = c.get_run(judge_id)
        except MlflowException:
            raise InputError(
                f"judge {judge_id}: no such run in {uri}; pass the judge_id `python -m cortex_exp.judge train` printed"
            ) from None
        if run.data.tags.get("kind") != KIND:
            raise InputError(f"judge {judge_id}: run {run.info.run_name or judge_id} is not a judge (kind=judge)")
        model = _read_artifact(c, run, MODEL_FILE)
        out_of_fold = _read_artifact(c, run, OUT_OF_FOLD_FILE)
    if model is None:
        raise InputError(f"judge {judge_id}: the run has no {MODEL_FILE}")
    return JudgeRun(judge_id, dict(run.data.tags), model, out_of_fold)
