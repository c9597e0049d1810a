"""Errors only the HTTP layer raises: about the request as HTTP (method, media type, body size,
``Accept``) and about who sends it (authentication). Engine errors are in
``topics_engine.errors``; both reach clients through ``wire``, the one mapping point.
"""

from __future__ import annotations

from topics_engine.errors import TopicsError


class Unauthorized(TopicsError):
    code = "unauthorized"


class Forbidden(TopicsError):
    code = "forbidden"


class MethodNotAllowed(TopicsError):
    code = "method_not_allowed"


class NotAcceptable(TopicsError):
    code = "not_acceptable"


class PayloadTooLarge(TopicsError):
    code = "payload_too_large"


class UnsupportedMediaType(TopicsError):
    code = "unsupported_media_type"
