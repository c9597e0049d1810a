"""What the caller's credentials allow (an extension): GET /v0/whoami.

The operation needs a known key but no scope (``security: [{bearerAuth: []}]``), so the gate
has already answered 401 for a missing or unknown key; a request reaches the handler without a
principal only when no keys are configured (dev mode: every request passes). The answer names
the key by its position, never its secret.
"""

from __future__ import annotations

from typing import Any

from ..auth import ALL_SCOPES, Principal
from ..context import ServerContext
from ..responses import Reply
from ..validation import ValidatedRequest


def identity(principal: Principal | None) -> dict[str, Any]:
    """The body of ``GET /v0/whoami`` for ``principal`` (``None``: dev mode): ``auth``,
    ``key_id``, ``key``, ``scopes`` (sorted) and ``prefixes`` (empty: any name)."""
    if principal is None:
        return {"auth": "dev", "key_id": None, "key": None, "scopes": sorted(ALL_SCOPES), "prefixes": []}
    return {
        "auth": "keys",
        "key_id": principal.key_id,
        "key": principal.label,
        "scopes": sorted(principal.scopes),
        "prefixes": list(principal.prefixes),
    }


def whoami(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    return Reply(200, identity(req.principal))
