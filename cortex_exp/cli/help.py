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
from hydra.core.object_type import ObjectType

RESOLVER = "cortex_groups"


def hidden(option: str) -> bool:
    """An option a user does not choose: a schema or a base that the options extend."""
    return option.startswith("_")


def config_groups() -> str:
    """One line per config group that offers a choice: `  group: option, option` (the groups
    below Hydra's own, `hydra/`, left out). The template is resolved at every composition of the
    config, not only for --help; each question to Hydra's config loader (`list_groups`,
    `get_group_options`) copies its whole repository, and the walk asks two per group, so it
    asks one copy made once (the copy the loader's own questions make, by its own method):
    0.39 -> 0.15 s of CPU per composition, measured. The resolver keeps the answer (`use_cache`)."""
    loader = GlobalHydra.instance().hydra.config_loader
    _, repository = loader._parse_overrides_and_create_caching_repo(None, [])
    lines = []

    def walk(parent: str) -> None:
        for child in sorted(repository.get_group_options(parent, ObjectType.GROUP)):
            group = f"{parent}/{child}" if parent else child
            if group == "hydra":
                continue
            options = [o for o in repository.get_group_options(group, ObjectType.CONFIG) if not hidden(o)]
            if options and options != ["default"]:
                lines.append(f"  {group}: {', '.join(options)}")
            walk(group)

    walk("")
    return "\n".join(lines)
