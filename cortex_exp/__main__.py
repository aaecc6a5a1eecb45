"""`python -m cortex_exp [HYDRA OVERRIDES]`: see `cortex_exp.cli.main`."""

from cortex_exp.cli.main import entry

if __name__ == "__main__":
    entry()
