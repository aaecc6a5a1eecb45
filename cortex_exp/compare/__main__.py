"""`python -m cortex_exp.compare`: see `cortex_exp.compare.cli`."""

import sys

from cortex_exp.compare.cli import entry

if __name__ == "__main__":
    sys.exit(entry())
