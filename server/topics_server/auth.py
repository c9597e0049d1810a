"""API keys (docs/SECURITY.md): the ``TOPICS_API_KEYS`` syntax, the hashed key store, and who a
request's bearer token says it is.

Entry syntax (comma-separated entries; an entry splits on ``:`` at most twice, so prefixes may
contain ``:``)::

    key                   all scopes, any name
    key:scopes            e.g. ``ci:read+write`` or ``ci:rw``
    key:scopes:prefixes   e.g. ``dash:read:tenant42:|shared.``
    key::prefixes         all scopes, prefix-restricted

Scopes are ``+``-separated from ``read``/``write``/``delete``/``admin`` (letters ``r``/``w``/
``d``/``a``, alias ``rw``); an empty field means all four. Prefixes are ``|``-separated byte
prefixes of topic/router names; an empty field means any name. A malformed entry refuses the
start, naming the entry's position — never its secret (fail closed: a typo never grants the
wrong scope).

Invariants of :class:`KeyStore`: it holds SHA-256 digests only, never a plaintext; a lookup
hashes the presented token once and compares the digest with *every* stored digest in constant
time, accumulating the match without an early exit, so neither which key matched nor how many
leading bytes did leaks through timing.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

READ, WRITE, DELETE, ADMIN = "read", "write", "delete", "admin"
ALL_SCOPES = frozenset((READ, WRITE, DELETE, ADMIN))
_SCOPE_TOKENS: dict[str, frozenset[str]] = {
    READ: frozenset((READ,)),
    WRITE: frozenset((WRITE,)),
    DELETE: frozenset((DELETE,)),
    ADMIN: frozenset((ADMIN,)),
    "r": frozenset((READ,)),
    "w": frozenset((WRITE,)),
    "d": frozenset((DELETE,)),
    "a": frozenset((ADMIN,)),
    "rw": frozenset((READ, WRITE)),
}


class KeyConfigError(ValueError):
    """A ``TOPICS_API_KEYS`` value that must not start a server (the message never contains a
    secret)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated API key: its identity (the entry's 1-based position in
    ``TOPICS_API_KEYS``, stable for the process lifetime), its scopes and its name allowlist."""

    key_id: int
    scopes: frozenset[str]
    prefixes: tuple[str, ...] = ()
    """Byte prefixes of the topic/router names the key may touch; empty: any name."""

    @property
    def label(self) -> str:
        """How logs and errors name the key (its position, never its secret)."""
        return f"key #{self.key_id}"

    def missing(self, required: Iterable[str]) -> list[str]:
        """The required scopes this key lacks, in a stable order."""
        return sorted(s for s in required if s not in self.scopes)

    def allows(self, name: str) -> bool:
        """Whether ``name`` is inside the allowlist (a plain byte-prefix match)."""
        return not self.prefixes or name.startswith(self.prefixes)


def _parse_scopes(field: str, position: int) -> frozenset[str]:
    if field == "":
        return ALL_SCOPES
    scopes: set[str] = set()
    for token in field.split("+"):
        granted = _SCOPE_TOKENS.get(token.strip().lower())
        if granted is None:
            raise KeyConfigError(
                f"TOPICS_API_KEYS entry #{position}: its scopes field (after the first ':') holds an "
                "unknown scope; use read, write, delete, admin (or r, w, d, a, rw) joined by '+', or "
                "leave the field empty for all scopes (the field is not echoed: a key may not contain ':')"
            )
        scopes |= granted
    return frozenset(scopes)


def _parse_prefixes(field: str, position: int) -> tuple[str, ...]:
    if field == "":
        return ()
    prefixes = tuple(p.strip() for p in field.split("|"))
    if any(p == "" for p in prefixes):
        raise KeyConfigError(
            f"TOPICS_API_KEYS entry #{position}: an empty prefix in the allowlist would match every "
            "name; list non-empty prefixes separated by '|', or leave the field empty for any name"
        )
    return prefixes


def parse_entry(entry: str, position: int) -> tuple[bytes, Principal]:
    """``(digest, principal)`` for one entry; :class:`KeyConfigError` if malformed."""
    secret, _, rest = entry.strip().partition(":")
    secret = secret.strip()
    if not secret:
        raise KeyConfigError(
            f"TOPICS_API_KEYS entry #{position} has no key before its first ':' (or is empty); "
            "each comma-separated entry is key[:scopes[:prefixes]]"
        )
    if not (secret.isascii() and secret.isprintable()):
        raise KeyConfigError(
            f"TOPICS_API_KEYS entry #{position}: a key must be printable ASCII (it travels in an HTTP header)"
        )
    scopes_field, _, prefixes_field = rest.partition(":")
    principal = Principal(
        position, _parse_scopes(scopes_field.strip(), position), _parse_prefixes(prefixes_field, position)
    )
    return digest(secret), principal


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class KeyStore:
    """The configured keys, as digests. Empty: authentication is disabled (dev mode)."""

    __slots__ = ("_digests", "_principals")

    def __init__(self, entries: list[tuple[bytes, Principal]] = ()) -> None:  # type: ignore[assignment]
        self._digests = [d for d, _ in entries]
        self._principals = [p for _, p in entries]

    @classmethod
    def parse(cls, value: str) -> KeyStore:
        """The store for a ``TOPICS_API_KEYS`` value (blank: no keys). Two entries with the same
        secret are refused: which scopes would apply would be ambiguous."""
        if not value.strip():
            return cls([])
        entries = [parse_entry(entry, i) for i, entry in enumerate(value.split(","), start=1)]
        seen: dict[bytes, int] = {}
        for d, principal in entries:
            if d in seen:
                raise KeyConfigError(
                    f"TOPICS_API_KEYS entries #{seen[d]} and #{principal.key_id} have the same key; "
                    "each key must appear once"
                )
            seen[d] = principal.key_id
        return cls(entries)

    @property
    def enabled(self) -> bool:
        return bool(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def authenticate(self, token: str | None) -> Principal | None:
        """The key ``token`` is, or ``None`` (missing or unknown). Constant time in the number
        of keys: every digest is compared, the match is accumulated arithmetically."""
        if token is None:
            return None
        presented = digest(token)
        found = 0
        for index, stored in enumerate(self._digests, start=1):
            found |= index * hmac.compare_digest(presented, stored)
        return self._principals[found - 1] if found else None
