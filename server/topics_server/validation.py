"""Per-operation request validation, compiled once from the OpenAPI document.

For every operation connexion resolves from the spec, :class:`OperationValidator` holds a
validator per path/query/header parameter and a msgspec decoder for the JSON body (``bodies``).
A handler receives a :class:`ValidatedRequest`: path parameters are validated at once; query and
header parameters and the body when the handler first asks for them — so a handler decides the
order of its checks (queue endpoints answer 404/409 for their topic before judging their own
fields). Asking for the body checks its media type (415), inflates ``Content-Encoding:
gzip`` under ``TOPICS_MAX_BODY_BYTES`` (413; a body over the limit is never buffered by the
transport), decodes and validates it in one pass (400), and caches the result.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from connexion.operations import AbstractOperation
from topics_engine.errors import InvalidRequest

from .auth import Principal
from .bodies import BodyCompiler, ValueValidator, too_large
from .errors import UnsupportedMediaType
from .request import Request

_UNREAD = object()


class ValidatedRequest:
    """What a handler receives: validated path params, and — validated on first use — the
    coerced query/header params and the decoded body. Absent optional parameters are absent
    from ``query``; handlers apply the contract's defaults."""

    __slots__ = ("path", "request", "principal", "_validator", "_query", "_headers", "_body")

    def __init__(self, path: dict[str, str], validator: OperationValidator, request: Request) -> None:
        self.path = path
        self.request = request
        self.principal: Principal | None = None
        """The request's API key (``None`` with auth disabled or on a public probe)."""
        self._validator = validator
        self._query: dict[str, Any] | None = None
        self._headers: dict[str, str] | None = None
        self._body: Any = _UNREAD

    @property
    def query(self) -> dict[str, Any]:
        if self._query is None:
            self._query = self._validator.query(self.request)
        return self._query

    @property
    def headers(self) -> dict[str, str]:
        if self._headers is None:
            self._headers = self._validator.headers(self.request)
        return self._headers

    def json(self) -> Any:
        """The decoded, validated body (all fields unset when an optional body is absent). The
        query and header parameters are validated first, so a handler that reads its body has
        had every part of the request checked."""
        if self._body is _UNREAD:
            _ = self.query, self.headers
            self._body = self._validator.body(self.request)
        return self._body

    def header(self, name: str) -> str | None:
        """Any request header (first occurrence), e.g. ``Accept``, which OpenAPI cannot declare."""
        return self.request.header(name)


def _coerce_boolean(name: str, raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise InvalidRequest(
        f"query parameter {name}: must be true or false, not {raw!r}", {"field": name, "value": raw}
    )


def _coerce_integer(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise InvalidRequest(
            f"query parameter {name}: must be an integer, not {raw!r}", {"field": name, "value": raw}
        ) from None


_COERCE = {"boolean": _coerce_boolean, "integer": _coerce_integer, "string": lambda _n, raw: raw}


@dataclass(slots=True)
class _Param:
    name: str
    location: str
    required: bool
    coerce: Any
    validator: ValueValidator


class OperationValidator:
    """Validates requests for one operation; built once at startup."""

    def __init__(self, operation: AbstractOperation, compiler: BodyCompiler, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes
        params = [self._param(p, compiler) for p in operation.parameters]
        self.path_params = [p for p in params if p.location == "path"]
        self.query_params = [p for p in params if p.location == "query"]
        self.header_params = [p for p in params if p.location == "header"]
        request_body = operation.request_body or {}
        schema = operation.body_schema("application/json") if request_body else None
        self.body_decoder = compiler.decoder(schema, operation.operation_id) if schema else None
        self.body_required = bool(request_body.get("required"))

    @staticmethod
    def _param(param: dict[str, Any], compiler: BodyCompiler) -> _Param:
        schema = param.get("schema", {})
        return _Param(
            name=param["name"],
            location=param["in"],
            required=bool(param.get("required")),
            coerce=_COERCE.get(schema.get("type", "string"), _COERCE["string"]),
            validator=compiler.validator(schema, param["name"]),
        )

    def bind(self, request: Request, path_values: dict[str, str]) -> ValidatedRequest:
        path = {p.name: p.validator.validate(path_values.get(p.name, "")) for p in self.path_params}
        return ValidatedRequest(path, self, request)

    def query(self, request: Request) -> dict[str, Any]:
        if not self.query_params:
            return {}
        raw: dict[str, str] = {}
        if not request.query_string:
            if any(p.required for p in self.query_params):
                name = next(p.name for p in self.query_params if p.required)
                raise InvalidRequest(f"query parameter {name}: is required", {"field": name})
            return {}
        for key, value in parse_qsl(request.query_string.decode("latin-1"), keep_blank_values=True):
            raw.setdefault(key, value)
        out: dict[str, Any] = {}
        for p in self.query_params:
            if p.name in raw:
                out[p.name] = p.validator.validate(p.coerce(p.name, raw[p.name]))
            elif p.required:
                raise InvalidRequest(f"query parameter {p.name}: is required", {"field": p.name})
        return out

    def headers(self, request: Request) -> dict[str, str]:
        out: dict[str, str] = {}
        for p in self.header_params:
            value = request.header(p.name)
            if value is not None:
                out[p.name] = p.validator.validate(value)
        return out

    def body(self, request: Request) -> Any:
        if self.body_decoder is None:
            return None
        if request.body_too_large:
            raise too_large(self.max_body_bytes)
        raw = request.body
        encoding = (request.header("content-encoding") or "").strip().lower()
        if encoding == "gzip" and raw:
            raw = self._gunzip(raw)
        elif encoding not in ("", "identity"):
            raise UnsupportedMediaType(
                f"Content-Encoding {encoding!r} is not supported; send identity or gzip"
            )
        if not raw:
            if self.body_required:
                raise InvalidRequest("a JSON request body is required", {"field": "body"})
            raw = b"{}"
        else:
            _check_media_type(request.header("content-type") or "")
        return self.body_decoder.decode(raw)

    def _gunzip(self, raw: bytes) -> bytes:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out = inflater.decompress(raw, self.max_body_bytes + 1)
        except zlib.error as err:
            raise InvalidRequest(f"gzip request body is corrupt: {err}", {"field": "body"}) from None
        if len(out) > self.max_body_bytes or inflater.unconsumed_tail:
            raise too_large(self.max_body_bytes)
        return out


_GOOD_MEDIA_TYPES: set[str] = set()


def _check_media_type(content_type: str) -> None:
    if content_type in _GOOD_MEDIA_TYPES:
        return
    _check_media_type_once(content_type)
    if len(_GOOD_MEDIA_TYPES) < 64:
        _GOOD_MEDIA_TYPES.add(content_type)


def _check_media_type_once(content_type: str) -> None:
    mime, _, params = content_type.partition(";")
    if mime.strip().lower() != "application/json":
        raise UnsupportedMediaType(
            f"Content-Type must be application/json (got {mime.strip() or 'none'})",
            {"content_type": content_type},
        )
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise UnsupportedMediaType(
                f"charset {value.strip()} is not supported; send UTF-8 JSON",
                {"content_type": content_type},
            )
