"""The CLI's own failures, both usage errors (exit status 2): bad arguments the parser could
not see, and bad input lines (``pub``)."""

from __future__ import annotations


class UsageError(Exception):
    """Arguments that do not make sense together, or an argument that is not valid JSON."""


class BadInput(UsageError):
    """A stdin line that is not JSON (or, with ``--records``, not a record object)."""
