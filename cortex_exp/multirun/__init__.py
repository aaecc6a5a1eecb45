"""A multirun (sweep) as one parent MLflow run: `parent` opens and closes it, `summary` is its
table, `plot` its picture."""
