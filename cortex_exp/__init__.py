"""cortex_exp: decide whether a change to a retrieval system really made it better.

Data flows: serve log -> golden set -> retrieval -> rows -> metrics -> MLflow -> compare.
"""

__version__ = "0.1.0"
