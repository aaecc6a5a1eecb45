"""One benchmark run, stage by stage: `prepare` (data), `indexes` (fit each component),
`probe`, `freshness`, `silence` and `agreement` (what the gates read), `gates/` (one module
per gate, and the one rule in `verdict`), `ranking` (+ `ranking_cache`), `learned` (the
non-core rows' stores), `record` (MLflow), `benchmark` (the order of it all)."""
