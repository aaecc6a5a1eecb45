"""The command-line edge of a benchmark run: the only package that imports Hydra.

`main` is the entry point (`python -m cortex_exp`), `config` turns the composed config into
`RunSettings`, `callbacks` makes a multirun one parent MLflow run.
"""
