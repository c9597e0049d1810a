"""Who may call what (API keys and their scopes): each operation's requirement, read from its
``security`` in the OpenAPI document, and the gate every request passes before its handler runs.

The document is the one place the per-route scope table lives: an operation's
``security: [{bearerAuth: [scopes]}]`` names the scopes it needs (all of them), a
``tokenQuery`` alternative allows ``?token=`` (the two SSE GETs only), ``security: []`` makes
it public (the probes, gated only by ``TOPICS_PROBE_AUTH``). An operation that declares no
``security`` refuses the start, so a route can never be added without a scope.

Order of the checks (before anything that reveals whether a name exists: docs/DECISIONS.md,
"Order of the checks"): the key
(401 ``unauthorized``), the scopes (403), the names in the path (403); the names in the body
are checked once the body is decoded (:func:`check_body_names`). With no keys configured every
request passes and the ``Authorization`` header is ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from .auth import KeyStore, Principal
from .bodies import opt
from .errors import Forbidden, Unauthorized
from .request import Request
from .validation import ValidatedRequest

NAME_PARAMS = ("topic", "router", "schedule")
"""Path parameters that are topic/router/schedule names (checked against a key's allowlist)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """What an operation asks of a request's credentials."""

    public: bool = False
    """``security: []``: no key needed (the probes, unless ``TOPICS_PROBE_AUTH``)."""
    scopes: frozenset[str] = frozenset()
    """Every one of these scopes is needed."""
    token_query: bool = False
    """The key may come as ``?token=`` (the first occurrence, form-decoded)."""

    @classmethod
    def from_security(cls, operation_id: str, security: list[dict[str, list[str]]] | None) -> Requirement:
        if security is None:
            raise ValueError(
                f"operation {operation_id} declares no security in openapi/v0.yaml; give it "
                "`security: [{bearerAuth: [<scopes>]}]` (or `security: []` for a public probe)"
            )
        if not security:
            return cls(public=True)
        schemes = {name: frozenset(scopes) for entry in security for name, scopes in entry.items()}
        if "bearerAuth" not in schemes or not set(schemes) <= {"bearerAuth", "tokenQuery"}:
            raise ValueError(
                f"operation {operation_id}: security must offer bearerAuth (and only tokenQuery besides)"
            )
        scopes = schemes["bearerAuth"]
        if schemes.get("tokenQuery", scopes) != scopes:
            raise ValueError(
                f"operation {operation_id}: bearerAuth and tokenQuery must require the same scopes"
            )
        return cls(scopes=scopes, token_query="tokenQuery" in schemes)


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive)."""
    value = request.header("authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def query_token(query_string: bytes) -> str | None:
    """The first ``token`` query parameter, form-decoded (``+`` is a space, ``%xx`` UTF-8)."""
    if b"token" not in query_string and b"%" not in query_string:
        return None
    for name, value in parse_qsl(query_string.decode("utf-8", "replace"), keep_blank_values=True):
        if name == "token":
            return value
    return None


def forbid_name(principal: Principal, name: str, where: str) -> None:
    """403 unless ``name`` is inside the key's allowlist."""
    if not principal.allows(name):
        raise Forbidden(
            f"{principal.label} may not use {where} {name!r}: it is outside the key's prefix allowlist",
            {"name": name, "field": where},
        )


def forbid_scopes(principal: Principal, required: frozenset[str], what: str) -> None:
    """403 unless the key has every scope in ``required``."""
    if required <= principal.scopes:
        return
    missing = principal.missing(required)
    raise Forbidden(
        f"api key lacks {'+'.join(missing)} scope for {what}",
        {"required": sorted(required), "missing": missing},
    )


class Gate:
    """Authentication and authorization of every request (no keys: everything passes)."""

    def __init__(self, keys: KeyStore, probe_auth: bool = False) -> None:
        self.keys = keys
        self.probe_auth = probe_auth

    def authenticate(self, request: Request, token_query: bool = False) -> Principal:
        """The request's key; 401 if it presents none or an unknown one."""
        token = bearer_token(request)
        if token is None and token_query:
            token = query_token(request.query_string)
        principal = self.keys.authenticate(token)
        if principal is None:
            raise Unauthorized(
                "missing or unknown bearer token; send Authorization: Bearer <API key>"
                if token is None
                else "unknown API key",
                None,
            )
        return principal

    def identify(self, request: Request, requirement: Requirement) -> Principal | None:
        """The request's key (401 without a known one); ``None`` with auth disabled, or on a
        public operation. Then :meth:`authorize` it."""
        if not self.keys.enabled or (requirement.public and not self.probe_auth):
            return None
        return self.authenticate(request, requirement.token_query)

    def authorize(
        self,
        principal: Principal | None,
        operation_id: str,
        requirement: Requirement,
        path: dict[str, str],
    ) -> None:
        """403 unless the key may call this operation on these path names."""
        if principal is None:
            return
        if requirement.scopes:
            forbid_scopes(principal, requirement.scopes, operation_id)
        for param in NAME_PARAMS:
            name = path.get(param)
            if name is not None:
                forbid_name(principal, name, param)


BodyNames = Callable[[Any], list[tuple[str, str]]]
"""The topic names a decoded body holds, as ``(field, name)`` pairs (only the fields that name
topics are looked at: a write's records never are)."""


def _set(value: Any, name: str) -> Any:
    """A decoded body's field, ``None`` when absent or unset."""
    return opt(getattr(value, name, None))


def dead_letter_names(config: Any) -> list[tuple[str, str]]:
    """A topic config's ``dead_letter`` topic (``put_topic``)."""
    name = _set(config, "dead_letter") if config is not None else None
    return [("dead_letter", name)] if isinstance(name, str) else []


def appended_config_names(body: Any) -> list[tuple[str, str]]:
    """The ``dead_letter`` of the config an append carries (``append_records``)."""
    return [(f"config.{field}", name) for field, name in dead_letter_names(_set(body, "config"))]


def router_names(body: Any) -> list[tuple[str, str]]:
    """A router's ``source`` and ``dest`` (``put_router``)."""
    return [(field, name) for field in ("source", "dest") if isinstance(name := _set(body, field), str)]


def schedule_names(body: Any) -> list[tuple[str, str]]:
    """The topic a schedule appends to (``put_schedule``)."""
    name = _set(body, "topic")
    return [("topic", name)] if isinstance(name, str) else []


def watched_names(body: Any) -> list[tuple[str, str]]:
    """The topics a watch session follows (``create_watch``)."""
    return [("topics", name) for name in _set(body, "topics") or {}]


def check_body_names(principal: Principal, names: BodyNames, req: ValidatedRequest) -> None:
    """403 if the request's body names a topic outside the key's allowlist (the body is
    decoded here only for a prefix-limited key)."""
    if not principal.prefixes:
        return
    for field, name in names(req.json()):
        forbid_name(principal, name, field)
