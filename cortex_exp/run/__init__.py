"""One benchmark run, stage by stage: `prepare` (data), `indexes` (fit each component),
`probe` + `gates` (refuse to measure), `ranking` (+ `ranking_cache`), `learned` (the non-core
rows' stores), `record` (MLflow), `benchmark` (the order of it all)."""
