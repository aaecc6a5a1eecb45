"""Text helpers: identifiers in each stack's conventions, and the shapes of titles, bodies and retyped tasks.

Nothing here knows the world; the functions that draw take the generator's `random.Random`, and the
order of their draws is part of the output (same seed, same bytes).
"""

from __future__ import annotations

import random


def camel(s: str) -> str:
    """`credit_note` -> `CreditNote`."""
    return "".join(p[:1].upper() + p[1:] for p in s.replace("-", "_").split("_") if p)


def lcamel(s: str) -> str:
    """`credit_note` -> `creditNote`; an all-caps key such as `CACHE_TTL` -> `cacheTtl`."""
    c = camel(s.lower()) if s.isupper() else camel(s)
    return c[:1].lower() + c[1:]


def source_file(stack: str, pkg: str, noun: str, suffix: str, project: str) -> str:
    """The path of the file that holds `noun`'s `suffix` code (or the deploy config) in a `stack` project."""
    if suffix == "deploy":
        deploy = {
            "py": ".github/workflows/deploy.yml",
            "ts": ".github/workflows/deploy.yml",
            "go": f"deploy/helm/{project}/values.yaml",
        }
        return deploy.get(stack, f"deploy/{project}.yaml")
    if stack == "py":
        return f"src/{pkg}/{noun}_{suffix}.py"
    if stack == "ts":
        return f"src/{pkg}/{lcamel(noun)}{camel(suffix)}.ts"
    if stack == "go":
        return f"internal/{pkg}/{noun}_{suffix}.go"
    if stack == "swift":
        return f"Sources/{camel(pkg)}/{camel(noun)}{camel(suffix)}.swift"
    if stack == "kotlin":
        return f"app/src/main/java/com/acme/{pkg}/{camel(noun)}{camel(suffix)}.kt"
    if stack == "java":
        return f"src/main/java/com/acme/{pkg}/{camel(noun)}{camel(suffix)}.java"
    return f"modules/{noun}/{suffix}.tf"


def test_name(stack: str, noun: str, aspect: str) -> str:
    """The name of the test of `noun`'s `aspect` in a `stack` project."""
    if stack == "py":
        return f"test_{noun}_{aspect}"
    if stack == "ts":
        return f"{lcamel(noun)}{camel(aspect)}.test.ts"
    if stack == "swift":
        return f"test{camel(noun)}{camel(aspect)}"
    if stack in ("kotlin", "java"):
        return f"{camel(noun)}{camel(aspect)}Test"
    return f"Test{camel(noun)}{camel(aspect)}"


def setting(stack: str, pkg: str, noun: str, key: str) -> str:
    """How code in a `stack` project reads the configuration `key` of `noun`."""
    if stack == "py":
        return f"settings.{key}" if key.endswith("_URL") else f"settings.{noun.upper()}_{key}"
    if stack == "ts":
        return f"config.{lcamel(noun)}.{lcamel(key)}"
    if stack == "go":
        return f"cfg.{camel(noun)}{camel(key.lower())}"
    if stack == "swift":
        return f"AppConfig.{lcamel(noun)}{camel(key.lower())}"
    if stack in ("kotlin", "java"):
        return f"{pkg}.{noun.replace('_', '-')}.{key.lower().replace('_', '-')}"
    return f"var.{noun}_{key.lower()}"


def sentence_case(s: str) -> str:
    """Capitalise a sentence that starts with a plain lower-case word (not with `test_x` or `fooBar`)."""
    head = s.split(" ", 1)[0]
    return s[:1].upper() + s[1:] if head.isalpha() and head.islower() else s


def compose(rng: random.Random, kind: str, sents: list[str]) -> str:
    """A document body of `kind`: a decision record, a post-mortem (both sometimes unlabelled) or numbered steps."""
    if kind == "decision":
        labels = ["Context:", "Decision:", "Consequences:"]
        if rng.random() < 0.3:
            return "Status: accepted. " + " ".join(sents)
        return " ".join(f"{labels[min(i, 2)]} {s}" for i, s in enumerate(sents))
    if kind == "lesson":
        labels = ["What happened:", "Root cause:", "Fix:"]
        if rng.random() < 0.4:
            return " ".join(sents)
        return " ".join(f"{labels[min(i, 2)]} {s}" for i, s in enumerate(sents))
    return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(sents))


def vary(rng: random.Random, task: str) -> str:
    """The same task as another session types it: other casing, other white space."""
    out = task
    for _ in range(rng.choice([1, 1, 2])):
        r = rng.random()
        if r < 0.22:
            out = out.lower()
        elif r < 0.34:
            out = out[:1].swapcase() + out[1:]
        elif r < 0.58:
            words = out.split(" ")
            i = rng.randrange(1, len(words)) if len(words) > 1 else 0
            out = " ".join(words[:i]) + "  " + " ".join(words[i:]) if i else out + "  "
        elif r < 0.78:
            out = out + " "
        elif r < 0.86:
            out = " " + out
        elif r < 0.92:
            out = out.replace(" ", "\t", 1)
        else:
            out = out.upper() if len(out) < 40 else out[:1].lower() + out[1:]
    return out
