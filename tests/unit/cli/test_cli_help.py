"""Every entry point's `--help` says what it does and shows two examples or more (issue 29, item
8), in one shape (`cortex_exp/console/usage.py`); each example is read back out of the help text and
parsed by the command's own parser, so an example cannot drift from the flags. `python -m
cortex_exp --help` was Hydra's generic text ("main is powered by Hydra") listing the schemas
the options extend (`row: _schema, core, ...`, `retriever: _base, ...`) as if they were choices."""

from __future__ import annotations

import argparse
import shlex

import pytest
from support import ROOT
from support.cli import compose_cfg

from cortex_exp.check_retriever.__main__ import main as check_main
from cortex_exp.check_retriever.__main__ import parser as check_parser
from cortex_exp.cli.main import main as cortex_main
from cortex_exp.compare.cli import build_parser as compare_parser
from cortex_exp.compare.cli import main as compare_main
from cortex_exp.compare.plans.cli import parser as plan_parser
from cortex_exp.console.usage import EXAMPLES
from cortex_exp.demo.__main__ import main as demo_main
from cortex_exp.golden.__main__ import main as golden_main
from cortex_exp.golden.__main__ import parser as golden_parser
from cortex_exp.judge.__main__ import main as judge_main
from cortex_exp.judge.__main__ import parser as judge_parser
from cortex_exp.plan.__main__ import main as plan_main
from cortex_exp.tracking.__main__ import build_parser as tracking_parser
from cortex_exp.tracking.__main__ import main as tracking_main

# module -> (its main(argv), its parser; None: the parser is built inside main)
ENTRY_POINTS = {
    "cortex_exp.golden": (golden_main, golden_parser),
    "cortex_exp.compare": (compare_main, compare_parser),
    "cortex_exp.plan": (plan_main, plan_parser),
    "cortex_exp.check_retriever": (check_main, check_parser),
    "cortex_exp.tracking": (tracking_main, tracking_parser),
    "cortex_exp.demo": (demo_main, None),
    "cortex_exp.judge": (judge_main, judge_parser),
}


def subcommands(parser: argparse.ArgumentParser) -> list[str]:
    return [name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices]


def commands() -> list[tuple[str, tuple[str, ...]]]:
    """(module, subcommand path) of every command: each entry point, and each of its subcommands."""
    out = []
    for module, (_, parser) in ENTRY_POINTS.items():
        out.append((module, ()))
        out += [(module, (sub,)) for sub in (subcommands(parser()) if parser else [])]
    return out


def help_of(capsys, main, argv: list[str]) -> str:
    """What `main(ARGV --help)` prints; it ends with exit 0 (argparse's SystemExit, or returned)."""
    try:
        code = main([*argv, "--help"])
    except SystemExit as done:
        code = done.code
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def examples_in(text: str) -> list[str]:
    """The examples a --help lists: the indented lines after `examples:`, up to the first line
    that is not indented."""
    lines = text.splitlines()
    assert EXAMPLES in lines, text
    out = []
    for line in lines[lines.index(EXAMPLES) + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line.strip())
    return out


def argv_of(example: str, module: str) -> list[str]:
    """The arguments an example passes to `python -m <module>` (environment assignments before
    it, and a comment after it, left out)."""
    words = shlex.split(example, comments=True)
    while "=" in words[0] and not words[0].startswith("python"):
        words = words[1:]
    assert words[:3] == ["python", "-m", module], example
    return words[3:]


@pytest.mark.parametrize("module, sub", commands(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_every_command_says_what_it_does_and_shows_two_examples_that_parse(capsys, module, sub):
    main, parser = ENTRY_POINTS[module]
    text = help_of(capsys, main, list(sub))
    description = text.split("\n\n")[1]  # after the usage lines
    assert len(description.split()) >= 15, text
    examples = examples_in(text)
    assert len(examples) >= 2, text
    for example in examples:
        argv = argv_of(example, module)
        assert argv[: len(sub)] == list(sub), example
        if parser is not None:
            parser().parse_args(argv)  # a usage error raises (exit 2)


def test_python_m_cortex_exp_help_shows_its_examples_and_only_real_choices(capsys):
    text = help_of(capsys, cortex_main, [])
    assert text.startswith("usage: python -m cortex_exp ") and "One benchmark run" in text
    assert "powered by Hydra" not in text
    examples = examples_in(text)
    assert len(examples) >= 2
    for example in examples:  # each composes (a sweep's values: its first)
        argv = [a for a in argv_of(example, "cortex_exp") if a != "-m"]
        compose_cfg([a.split(",")[0] for a in argv])
    groups = text.split("config groups (group=option):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert groups == [
        "  data: demo, files, scifact",
        "  retriever: bm25_v1, bm25_v2, dense, hybrid, runfile, service",
        "  retriever/lexical: bm25_v1, bm25_v2",
        "  row: core, graph, graph_boosts, graph_boosts_honest, graph_boosts_honest_full",
    ]
    assert "_schema" not in text and "_base" not in text
    assert "gates:\n  allow_degraded: false" in text  # every key is still shown, in the config


def test_a_users_own_config_folder_shows_its_options(capsys):
    """`--config-dir` adds options to a group: the help lists them (here the example's tfidf)."""
    text = help_of(capsys, cortex_main, ["--config-dir", str(ROOT / "examples/custom_retriever/conf")])
    (line,) = [line for line in text.splitlines() if line.startswith("  retriever: ")]
    assert "tfidf" in line.split(": ")[1].split(", ")
