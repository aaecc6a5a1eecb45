"""`python -m cortex_exp --help`: what the command does, two examples, the options a user
chooses among. The text is Hydra's help template, `conf/hydra/help/cortex.yaml`; this module
lists the config groups for it, through the resolver `${cortex_groups:}` the template calls.

Hydra's own listing (`$APP_CONFIG_GROUPS`) shows every option of every group: the schemas the
options extend too (`row/_schema`, `data/_schema`, `retriever/_base`), and the groups that hold
only their schema (`gates: default`, set key by key: `gates.allow_degraded=true`). Neither is a
choice, so `config_groups` leaves them out; the keys are in the composed config the help ends
with.
"""

from __future__ import annotations

from hydra.core.global_hydra import GlobalHydra

RESOLVER = "cortex_groups"


def hidden(option: str) -> bool:
    """An option a user does not choose: a schema or a base that the options extend."""
    return option.startswith("_")


def config_groups() -> str:
    """One line per config group that offers a choice: `  group: option, option`."""
    hydra = GlobalHydra.instance().hydra
    lines = []
    for group in sorted(hydra.list_all_config_groups()):
        if group == "hydra" or group.startswith("hydra/"):
            continue
        options = [o for o in hydra.config_loader.get_group_options(group) if not hidden(o)]
        if options and options != ["default"]:
            lines.append(f"  {group}: {', '.join(options)}")
    return "\n".join(lines)
