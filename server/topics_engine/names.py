"""Topic-, router- and consumer-name rules: ``^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$``,
byte-exact, case-sensitive (a router name also allows ``>``).

Names never reach the filesystem (storage keys files by numeric topic id), but they are still
validated here, at the engine boundary, whatever the HTTP layer already checked.
"""

from __future__ import annotations

import re

from .errors import InvalidRequest

TOPIC_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,254}")
ROUTER_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:>-]{0,254}")
"""Router names: the topic charset plus ``>`` (for the ``"<source>-><dest>"`` convention)."""


def check_topic_name(name: str, field: str = "topic") -> str:
    if not TOPIC_NAME_RE.fullmatch(name):
        raise InvalidRequest(
            f"invalid topic name {name!r}: use 1-255 characters from A-Z a-z 0-9 . _ : - "
            "starting with a letter or digit",
            {"field": field, "value": name},
        )
    return name


def check_consumer_name(name: str) -> str:
    """``name`` if it is a valid consumer name (the topic-name rule: a consumer is named like a
    topic, an extension of issue 25), else 400 ``invalid_request``."""
    if not TOPIC_NAME_RE.fullmatch(name):
        raise InvalidRequest(
            f"invalid consumer name {name!r}: use 1-255 characters from A-Z a-z 0-9 . _ : - "
            "starting with a letter or digit",
            {"field": "consumer", "value": name},
        )
    return name
