"""Comparing runs query by query: `pairing` (which queries, which warnings), `stats` (paired
intervals), `analysis` (a metric's figures and verdict), `report` (table, markdown, plot),
`sweep_cv` (what choosing a sweep's best value on the same queries is worth), `cli`."""
