"""Every argparse command's usage error is exit 2 through `errors.UsageParser`: one line naming
the command, what is wrong, then the usage (docs/interface.md §5), never argparse's own exit."""

from __future__ import annotations

import pytest

from cortex_exp.check_retriever.__main__ import main as check_retriever
from cortex_exp.compare.cli import main as compare
from cortex_exp.compare.plans.cli import main as plan
from cortex_exp.judge.__main__ import main as judge
from cortex_exp.tracking.__main__ import main as tracking

COMMANDS = {  # every command built on errors.UsageParser
    "check_retriever": (check_retriever, ["--bogus"]),
    "compare": (compare, ["--bogus"]),
    "plan": (plan, ["create", "--bogus"]),
    "judge": (judge, ["train", "--bogus"]),
    "tracking": (tracking, ["replay", "--bogus"]),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_flag_nobody_knows_is_exit_2_naming_the_command_and_its_usage(name, capsys):
    main, argv = COMMANDS[name]
    assert main(argv) == 2
    err = capsys.readouterr().err
    first, *rest = err.strip().splitlines()
    assert first.startswith(f"{name}: "), err
    assert "required" in first or "--bogus" in first, err  # what is wrong, in argparse's words
    assert any(line.startswith("usage: python -m cortex_exp.") for line in rest), err
