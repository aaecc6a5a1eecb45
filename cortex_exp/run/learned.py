"""The graph and boost stores of a non-core row, learned from the serve log's verdicts.

The only module of the run that reads verdicts; `benchmark` calls it for non-core rows only,
so the `core` row never touches them.
"""

from __future__ import annotations

from cortex_exp.data.corpus import Corpus
from cortex_exp.findings import component_down
from cortex_exp.rows import RowSpec
from cortex_exp.run.log import log
from cortex_exp.settings import FeatureParams


def load_features(serves_path: str | None, params: FeatureParams, row: RowSpec, corpus: Corpus):
    """(features, store health, findings) of `row`, learned from the serve log at `serves_path`
    (`data.serves`) with `params` (`row.features`); (None, {}, []) for a row without learned
    features.

    A store that fails to load or answer is COMPONENT DOWN; an empty one is allowed (reported
    in health.json)."""
    if not (row.graph or row.boosts):
        return None, {}, []
    from cortex_exp.data.servelog import load_serves
    from cortex_exp.features import learn_features

    serves = load_serves(serves_path) if serves_path else None
    try:
        features = learn_features(serves, corpus, params)
        health = features.probe()
    except Exception as exc:  # the store is a component: down, not a bug to hide
        down = component_down(
            "learned_stores",
            "graph/boosts",
            f"the learned stores failed to load: {type(exc).__name__}: {exc}",
            "The rows that use them would silently rank like core, so the measurement would be of something else.",
            reason="graph/boost stores down",
            let_through="",  # let through, it prints its message
        )
        return None, {"graph": {"ok": False, "detail": str(exc)}, "boosts": {"ok": False, "detail": str(exc)}}, [down]
    stores = {name: {"ok": True, **health} for name, on in (("graph", row.graph), ("boosts", row.boosts)) if on}
    if health.get("empty"):
        log(f"note: the learned stores are empty ({serves_path or 'no serve log'}): row {row.name} ranks like core")
    return features, stores, []
