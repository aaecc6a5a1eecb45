"""What the test modules share, in one place (a test module never imports another one):
tiny hand-checkable data (`tiny`), the generated demo data (`demo`), MLflow stores (`stores`),
the commands run in this process or in one of their own (`cli`), and the builders of the
compare and integrity tests. `ROOT` is the checkout the tests run from."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
