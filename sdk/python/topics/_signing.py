"""Standard Webhooks signatures (https://www.standardwebhooks.com, the convention Svix started):
how :class:`topics.Relay` signs a delivery so that its receiver can verify and dedupe it.

- A secret is ``whsec_`` followed by base64 (standard alphabet; missing ``=`` padding is
  tolerated); the HMAC key is the decoded bytes, never the text.
- A delivery carries ``webhook-id`` (unique per message, the same on every attempt),
  ``webhook-timestamp`` (integer seconds since the epoch, at this attempt) and
  ``webhook-signature``: ``v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`` — one
  per secret, space-separated, so a receiver that knows either of two secrets (a rotation)
  verifies it.

Secrets never appear in a ``repr``, an error message or a log line.

The example is the specification's own test vector (and Svix's documentation's):

>>> secret = WebhookSecret.parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
>>> secret
WebhookSecret(<24 bytes>)
>>> signature([secret], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

PREFIX = "whsec_"


class WebhookSecret:
    """A parsed ``whsec_…`` secret: the HMAC key (:attr:`key`, bytes)."""

    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        if not key:
            raise ValueError("a webhook secret's key is empty")
        self.key = key

    def __repr__(self) -> str:
        return f"WebhookSecret(<{len(self.key)} bytes>)"

    @classmethod
    def parse(cls, text: str) -> WebhookSecret:
        """``whsec_<base64>`` → its key; :class:`ValueError` saying what is wrong (without
        echoing the secret) otherwise."""
        if not isinstance(text, str) or not text.startswith(PREFIX):
            raise ValueError(
                "a webhook secret is 'whsec_' followed by base64 (the Standard Webhooks format); "
                "this one does not start with 'whsec_'"
            )
        encoded = text[len(PREFIX) :].strip()
        encoded += "=" * (-len(encoded) % 4)
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(
                "a webhook secret is 'whsec_' followed by base64 (the Standard Webhooks format); "
                "what follows 'whsec_' here is not base64"
            ) from None
        if not key:
            raise ValueError("a webhook secret is 'whsec_' followed by base64; nothing follows 'whsec_' here")
        return cls(key)


def signature(secrets: Sequence[WebhookSecret], msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<sig>`` per secret, space-separated."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return " ".join(
        "v1," + base64.b64encode(hmac.new(s.key, signed, hashlib.sha256).digest()).decode() for s in secrets
    )
