"""cortex_exp: decide whether a change to a retrieval system really made it better.

Data flows: serve log -> golden set -> retrieval -> rows -> metrics -> MLflow -> compare.

From Python (a notebook): `from cortex_exp import api`, then `api.run(...)`, `api.compare(a, b)`
(docs/python-api.md). `cortex_exp.api` is imported when first used, so the commands do not pay
for it; its functions are not re-exported here, since `cortex_exp.run` and `cortex_exp.compare`
name subpackages (see `cortex_exp.api`).
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    if name == "api":  # `import cortex_exp; cortex_exp.api.compare(...)` without importing it up front
        import importlib

        return importlib.import_module("cortex_exp.api")
    raise AttributeError(f"module 'cortex_exp' has no attribute {name!r}")
