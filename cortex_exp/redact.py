"""Secrets out of every text the tool writes (docs/reliability.md, "Deadlines and live checks").

A service's auth value is read from its environment variable when the run starts; `secret(value)`
notes it, and `scrub(text)` replaces it in any text — the value whole, its credential without the
scheme (`Bearer <token>` -> `<token>`), and their JSON- and URL-escaped forms, so a server that
echoes the header in its error body cannot put the secret into a message. The writers call
`scrub`: the MLflow run's tags, description, params and artifacts (`tracking.runlog`), the
terminal's log lines (`logs`) and error messages (`errors.report`).

A tracking URI may carry credentials (`http://user:password@host`, which MLflow's client sends
as basic auth): `uri_credentials(uri)` notes them (`tracking.store.resolve_uri` calls it), so
`http://alice:[redacted]@host` is all a message ever shows.
"""

from __future__ import annotations

import json
from urllib.parse import quote, unquote, urlsplit

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


def uri_credentials(uri: str) -> str:
    """Note the password of a URI's `user:password@` as a secret (whole, and as the URI holds it,
    percent-encoded); returns the URI unchanged. A password shorter than `MIN_LENGTH` is hidden
    with its `user:` (`alice:[redacted]@` needs the password's own forms; a shorter one, the pair)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    if parts.password:
        raw = parts.netloc.rsplit("@", 1)[0].split(":", 1)[1]
        secret(raw)
        secret(unquote(raw))
        if len(raw) < MIN_LENGTH:
            secret(parts.netloc.rsplit("@", 1)[0])
    return uri
