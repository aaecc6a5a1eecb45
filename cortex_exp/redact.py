"""Secrets out of every text the tool writes (docs/reliability.md, "Deadlines and live checks").

A service's auth value is read from its environment variable when the run starts; `secret(value)`
notes it, and `scrub(text)` replaces it in any text — the value whole, its credential without the
scheme (`Bearer <token>` -> `<token>`), and their JSON- and URL-escaped forms, so a server that
echoes the header in its error body cannot put the secret into a message. The writers call
`scrub`: the MLflow run's tags, description, params and artifacts (`tracking.runlog`), the
terminal's log lines (`logs`) and error messages (`errors.report`).
"""

from __future__ import annotations

import json
from urllib.parse import quote

REDACTED = "[redacted]"
MIN_LENGTH = 4  # a shorter fragment (a scheme word) is not worth hiding and would mangle text
_SECRETS: set[str] = set()


def _forms(value: str) -> set[str]:
    parts = {value}
    scheme, _, credential = value.strip().partition(" ")
    if credential.strip():
        parts.add(credential.strip())
    forms = set()
    for part in parts:
        forms |= {part, json.dumps(part)[1:-1], quote(part, safe=""), quote(part)}
    return {f for f in forms if len(f) >= MIN_LENGTH}


def secret(value: str) -> str:
    """Note `value` as a secret (every later `scrub` hides it); returns it unchanged."""
    if value:
        _SECRETS.update(_forms(value))
    return value


def scrub(text: str) -> str:
    """`text` without any noted secret (each form replaced by `[redacted]`, longest first)."""
    if not _SECRETS or not isinstance(text, str):
        return text
    for form in sorted(_SECRETS, key=len, reverse=True):
        if form in text:
            text = text.replace(form, REDACTED)
    return text
