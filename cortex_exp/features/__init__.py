"""Features learned from the serve log's verdicts: graph edges, helpfulness boosts, and
their leave-one-out views. Only non-core rows import this package (see `cortex_exp.rows`).

Built once per run (`learn_features`), as integer arrays over document indices that grow
with `LearnedFeatures.add(serves)` and shrink per query with `LearnedFeatures.without(ids)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from cortex_exp.features.counts import Counts
from cortex_exp.features.learned import LearnedFeatures
from cortex_exp.features.view import FeatureView

if TYPE_CHECKING:
    from cortex_exp.data.corpus import Corpus
    from cortex_exp.data.servelog import Serve
    from cortex_exp.settings import FeatureParams

__all__ = ["Counts", "FeatureView", "LearnedFeatures", "learn_features"]


def learn_features(serves: Iterable[Serve] | None, corpus: Corpus, params: FeatureParams) -> LearnedFeatures:
    """The features of a serve log; `None` or an empty log gives empty features (they change nothing)."""
    return LearnedFeatures(corpus, params).add(serves or ())
