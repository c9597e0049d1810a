"""What a schedule appends on each run: the records of a write body, kept as JSON text, checked
once when the schedule is put, appended through the engine's write path with a key of its own.

- **The records' text** is the ``records`` array of the ``PUT`` body as the server decoded it
  (each record's ``data`` and ``meta`` values verbatim), stored in the schedule's WAL frames and
  snapshots and served back by ``GET``. It becomes the engine's :class:`NewRecords` through a
  :data:`RecordsDecoder`: the server gives the one compiled from the spec's ``RecordIn`` — the
  schema and the decoding of ``POST /v0/topics/{t}/records`` bodies — so a record field the
  write path learns reaches schedules unchanged; embedded without a server, the engine's own
  JSON-value path (:func:`json_records`, ``batch.prepare_batch``) decodes them.
- **Checked like a write** (:func:`check_write`): the batch size, the batch node and every
  record's byte and character limits, with the same errors as an append (``batch_too_large``,
  ``record_too_large``, ``invalid_request``) — when the schedule is put, so a schedule is
  never accepted that no run could append. Each run is an append like any other, checked
  again against the limits of the day.
- **The key of a run** (:func:`run_key`) is derived from the schedule's name and the due time
  it runs for: an append repeated for the same due time (after a crash lost the run's own WAL
  frame) is deduplicated by the topic's idempotency window.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable

import orjson

from ..batch import check_batch_node, check_batch_size, prepare_batch
from ..errors import InvalidRequest
from ..limits import Limits
from ..records import NewRecords, encode

RecordsDecoder = Callable[[bytes, str | None], NewRecords]
"""``(records JSON text, batch node) -> NewRecords``: a write body's ``records`` array decoded
(shape only: no size limit), the batch ``node`` applied; raises ``InvalidRequest``."""

_SHAPE_ONLY = Limits(max_batch_records=sys.maxsize, max_meta_keys=sys.maxsize, max_node_bytes=sys.maxsize)


def json_records(text: bytes, node: str | None) -> NewRecords:
    """The engine's decoder (no server): the records as JSON values, through the JSON-value
    write path (``batch.prepare_batch``; ``data`` is re-encoded, not kept verbatim)."""
    try:
        values = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise InvalidRequest(f"records is not valid JSON: {err}", {"field": "records"}) from None
    return prepare_batch(values, node, _SHAPE_ONLY)


def records_text(value: object) -> bytes:
    """The ``records`` of a schedule body as JSON text: text as given (``bytes``/``str``), or
    JSON values (a ``list``) encoded."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, list):
        return orjson.dumps(value)
    raise InvalidRequest("records must be a non-empty array of records", {"field": "records"})


def check_write(batch: NewRecords, node: str | None, limits: Limits, now_ms: int) -> None:
    """The checks an append of ``batch`` passes (its node, its size, each record's limits),
    raising what an append would."""
    if not batch.count:
        raise InvalidRequest("records must be a non-empty array", {"field": "records"})
    check_batch_node(node, limits)
    check_batch_size(batch.count, limits)
    encode(batch, 1, now_ms, limits.record_limits)


def run_key(name: str, due_ms: int, max_chars: int) -> str:
    """The idempotency key of the run of schedule ``name`` for ``due_ms``:
    ``schedule:<name>:<due_ms>``, the name replaced by ``#`` and its BLAKE2b digest when the key
    would exceed ``max_chars``."""
    key = f"schedule:{name}:{due_ms}"
    if len(key) <= max_chars:
        return key
    digest = hashlib.blake2b(name.encode(), digest_size=16).hexdigest()
    return f"schedule:#{digest}:{due_ms}"
