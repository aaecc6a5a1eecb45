"""What the command line may name: `_target_` overrides, on or off (docs/interface.md §2).

By default a command-line override may set a component's `_target_`
(`retriever.lexical._target_=yourpkg.YourRetriever`): Hydra then instantiates that callable,
whatever it is, with the component's parameters. That is a feature for the person at the
keyboard and a hole when the arguments come from someone else (a bot that passes a pull
request's overrides through). `CORTEX_ALLOW_TARGET_OVERRIDES=false` in the environment of the
process — set by whoever runs the command, out of reach of its arguments — refuses (exit 2,
before Hydra builds anything) every argument that could name a callable:
- an override whose key has a `_target_` part, or whose value holds a `_target_` key (a dict
  value, a list of them, a sweep of them); logging's `()` factory key likewise;
- an override of `hydra.searchpath`, `hydra.callbacks`, `hydra.job_logging` or
  `hydra.hydra_logging` (each can bring config that names a callable);
- `--config-dir`, `--config-path` and `--experimental-rerun` (another folder of config files).
Choosing options of the installed config groups (`retriever=hybrid`, `hydra/launcher=joblib`)
and setting plain values stay allowed.
"""

from __future__ import annotations

import os
import re
from typing import Any

from cortex_exp.errors import InputError

ENV = "CORTEX_ALLOW_TARGET_OVERRIDES"
CALLABLE_KEYS = ("_target_", "()")  # Hydra's instantiate, logging.config's factory
GUARDED = ("hydra.searchpath", "hydra.callbacks", "hydra.job_logging", "hydra.hydra_logging")
FOLDER_FLAGS = (
    ("config_dir", "--config-dir"),
    ("config_path", "--config-path"),
    ("experimental_rerun", "--experimental-rerun"),
)
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def target_overrides_allowed() -> bool:
    """`CORTEX_ALLOW_TARGET_OVERRIDES` (default true); any other value than true/false is exit 2."""
    value = os.environ.get(ENV, "true").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(f"{ENV}={value!r}: expected true or false")


def _holds_callable(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in CALLABLE_KEYS or _holds_callable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(map(_holds_callable, value))
    items = getattr(value, "list", None)  # a choice sweep: a=1,{_target_:x}
    return isinstance(items, list) and any(map(_holds_callable, items))


def refused(overrides: list[str]) -> list[str]:
    """The overrides of `overrides` that could name a callable (see the module's docstring)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = []
    for text, override in zip(overrides, OverridesParser.create().parse_overrides(overrides), strict=True):
        key = override.key_or_group
        parts = re.split(r"[./]", key)
        value = None if override.is_delete() else override.value()
        if any(p in CALLABLE_KEYS for p in parts) or _holds_callable(value) or key.startswith(GUARDED):
            out.append(text)
    return out


def check_arguments(argv: list[str]) -> None:
    """With `CORTEX_ALLOW_TARGET_OVERRIDES=false`, exit 2 naming every argument of `argv` (the
    command line after the program) that could name a callable; nothing when it is true."""
    if target_overrides_allowed():
        return
    from hydra._internal.utils import get_args_parser

    try:
        args = get_args_parser().parse_args(argv)
    except SystemExit:  # Hydra says what is wrong with the command line when it parses it
        return
    from hydra.errors import OverrideParseException

    try:
        named = refused(args.overrides)
    except OverrideParseException:  # Hydra refuses a malformed override itself (exit 2)
        return
    problems = [f"{flag}: another folder of config files" for attr, flag in FOLDER_FLAGS if getattr(args, attr)]
    problems += [f"{text}: names a callable (`_target_`) or config that can" for text in named]
    if problems:
        raise InputError(
            f"{ENV}=false: the command line may not name what gets instantiated; put the component "
            "in a config file of the installed config groups, or run with it true",
            problems,
        )
