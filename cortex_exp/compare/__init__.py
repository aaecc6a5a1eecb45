"""Comparing runs query by query: `options` (every option, one frozen value), `pairing` (which
queries, which findings), `stats` (paired intervals, the verdict), `analysis` (one baseline
against one candidate or many: the one analysis), `report` (text, markdown, plots), `record`
(the one MLflow comparison run), `session` (runs fetched, analysed, warned about: the command
line's and the Python API's path), `sweep_cv` (what choosing a sweep's best value on the same
queries is worth), `cli`; `plans/` (plans and decisions: `compare --plan`, `plan create`)."""
