"""The judge's model: a logistic regression of P(positive | features), saved as JSON, never pickle.

Why a logistic regression: the features are a handful of numbers; its log-loss fit gives
probabilities that are calibrated where the model is right (what the audit's estimator needs:
the judge's score stands in for a verdict's expected value, docs/unjudged.md), its coefficients
say what it learned, it is a dozen numbers in a JSON file anyone can read and check, and it trains
in milliseconds and scores 100k pairs as one matrix product. A tree ensemble might rank a little
better, at the price of a calibration step, a serialization format of its own and a model that
can memorise a few hundred verdicts per project.

The model standardises each column (mean and scale of the training pairs; a constant column
keeps scale 1), then `p = 1 / (1 + exp(-(z · coef + intercept)))`. scikit-learn fits it
(L2 penalty, C = 1: the default, a mild shrinkage that keeps a constant or rare column at ~0);
`predict` recomputes it with numpy from the JSON's numbers, so a loaded judge needs no
scikit-learn object. The file holds the feature names (the numeric ones, then `kind=<kind>` for
each kind it knows: a document of another kind has 0 in all of them), the scaling, the
coefficients, the intercept, what computes the features (encoder, lexical side), the golden set
it learned from and the library versions. Its sha256 is the judge's digest.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib.metadata import version

import numpy as np
from scipy.special import expit

from cortex_exp.errors import InputError
from cortex_exp.judge.features import NUMERIC, FeatureTable

FORMAT = 1
C = 1.0  # inverse L2 strength (scikit-learn's default)
MAX_KINDS = 20  # one-hot columns for at most this many kinds (the most frequent among the training pairs)
KIND = "kind="
VERSIONED = ("scikit-learn", "numpy", "scipy", "cortex_exp")


@dataclass(frozen=True)
class JudgeModel:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    computed_by: dict = field(default_factory=dict)  # Features.describe(): the encoder and the lexical side
    trained_on: dict = field(default_factory=dict)  # golden_id, pairs, positives, noise, excluded
    versions: dict = field(default_factory=dict)
    regularization: dict = field(default_factory=lambda: {"penalty": "l2", "C": C})
    format: int = FORMAT
    kind: str = "logistic_regression"

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.removeprefix(KIND) for f in self.features if f.startswith(KIND))

    def predict(self, table: FeatureTable) -> np.ndarray:
        """P(positive) of each pair of `table` (float64)."""
        return self.fitted().predict(design(table, self.kinds))

    def fitted(self) -> Fitted:
        return Fitted(np.asarray(self.mean), np.asarray(self.scale), np.asarray(self.coef), self.intercept)

    def to_json(self) -> bytes:
        """The file's bytes: sorted keys, indented, UTF-8; floats as Python writes them (their
        shortest form that reads back to the same float)."""
        record = asdict(self)
        record["features"], record["mean"], record["scale"], record["coef"] = (
            list(self.features),
            list(self.mean),
            list(self.scale),
            list(self.coef),
        )
        return (json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    def digest(self) -> str:
        return hashlib.sha256(self.to_json()).hexdigest()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> JudgeModel:
        """The model a judge file holds; exit 2 naming `where` when it is not one."""
        try:
            record = json.loads(data)
            model = cls(
                features=tuple(record["features"]),
                mean=tuple(float(x) for x in record["mean"]),
                scale=tuple(float(x) for x in record["scale"]),
                coef=tuple(float(x) for x in record["coef"]),
                intercept=float(record["intercept"]),
                computed_by=dict(record["computed_by"]),
                trained_on=dict(record["trained_on"]),
                versions=dict(record["versions"]),
                regularization=dict(record["regularization"]),
                format=int(record["format"]),
                kind=str(record["kind"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{where}: not a judge model file ({type(exc).__name__}: {exc})") from None
        numeric = [f for f in model.features if not f.startswith(KIND)]
        problems = []
        if model.format != FORMAT or model.kind != "logistic_regression":
            problems.append(f"format {model.format} {model.kind!r}; this version reads {FORMAT} logistic_regression")
        if list(numeric) != list(NUMERIC):
            problems.append(f"numeric features {numeric}; this version computes {list(NUMERIC)}")
        if not len(model.features) == len(model.mean) == len(model.scale) == len(model.coef):
            problems.append("features, mean, scale and coef differ in length")
        if problems:
            raise InputError(f"{where}: cannot be used", problems)
        return model


def kinds_of(kinds: np.ndarray) -> tuple[str, ...]:
    """The kinds a model gets a column for: the MAX_KINDS most frequent among its training
    pairs (ties by name), in name order. Which kinds exist is not a label: the vocabulary of the
    whole training set serves every fold."""
    counts = Counter(kinds.tolist())
    top = sorted(counts, key=lambda k: (-counts[k], k))[:MAX_KINDS]
    return tuple(sorted(top))


def names(kinds: tuple[str, ...]) -> tuple[str, ...]:
    return (*NUMERIC, *(KIND + k for k in kinds))


def design(table: FeatureTable, kinds: tuple[str, ...]) -> np.ndarray:
    """The model's input matrix: the numeric features, then a one-hot column per known kind."""
    numeric = [table.numeric[name] for name in NUMERIC]
    onehot = [(table.kinds == k).astype(np.float64) for k in kinds]
    return np.column_stack(numeric + onehot) if len(table) else np.zeros((0, len(NUMERIC) + len(kinds)))


@dataclass(frozen=True)
class Fitted:
    """The fitted numbers, before they are a `JudgeModel` (cross-fitting's folds need only these)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        return expit(((x - self.mean) / self.scale) @ self.coef + self.intercept)


def fit(x: np.ndarray, y: np.ndarray) -> Fitted:
    """scikit-learn's StandardScaler, then LogisticRegression (L2, C)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=C, max_iter=1000).fit(scaler.transform(x), y)
    return Fitted(scaler.mean_.copy(), scaler.scale_.copy(), model.coef_[0].copy(), float(model.intercept_[0]))


def as_model(fitted: Fitted, kinds: tuple[str, ...], computed_by: dict, trained_on: dict) -> JudgeModel:
    return JudgeModel(
        features=names(kinds),
        mean=tuple(fitted.mean.tolist()),
        scale=tuple(fitted.scale.tolist()),
        coef=tuple(fitted.coef.tolist()),
        intercept=fitted.intercept,
        computed_by=computed_by,
        trained_on=trained_on,
        versions={name: version(name) for name in VERSIONED},
    )
