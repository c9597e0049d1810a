"""Typed payloads: the SDK's pydantic edge. ``read``, ``watch``, ``claim`` (sync and async) and
the ``Worker`` take ``model=`` — a pydantic model, a dataclass, a ``TypedDict``, anything
``pydantic.TypeAdapter`` accepts — and hand out :class:`TypedRecord` / :class:`TypedJob` objects
whose ``data`` is validated into it, one record at a time as it is handed out. A record whose
``data`` does not validate raises :class:`InvalidRecord` (naming its topic and seq) when
iteration reaches it; the records before it were delivered.

Writing needs nothing of this module: ``append``/``append_many`` take a pydantic model (or a
dataclass) as ``data`` directly (:mod:`topics._json` encodes it).

pydantic is imported on first use only, so the untyped paths (and the CLI) never load it; the
hot paths stay on msgspec/orjson.

>>> from pydantic import BaseModel
>>> class Order(BaseModel):
...     id: int
...     total: float
>>> check = validator(Order, "orders")
>>> check(7, b'{"id": 1, "total": 9.5}')
Order(id=1, total=9.5)
>>> try:
...     check(8, b'{"id": "x"}')
... except InvalidRecord as err:
...     (err.topic, err.seq, [e["loc"] for e in err.errors])
('orders', 8, [('id',), ('total',)])
>>> schema_of(Order)["required"]
['id', 'total']
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from ._worker_types import Permanent, is_async_handler
from .models import Job, RawRecord, Record

if TYPE_CHECKING:
    from pydantic import TypeAdapter

M = TypeVar("M")

Validate = Callable[[int, bytes], Any]
"""``(seq, raw JSON of data) -> the validated value``; raises :class:`InvalidRecord`."""


class InvalidRecord(ValueError):
    """A record's ``data`` did not validate into the ``model=`` a read, a claim or a Worker was
    given. ``topic`` and ``seq`` name it; ``errors`` are pydantic's (``ValidationError.errors()``:
    dicts with ``loc``, ``msg``, ``type``…); ``job`` is the claimed :class:`topics.Job` when a
    claim met it (ack, nack or dead-letter it), else ``None``; ``claimed`` every job that claim
    leased (all still held); ``record`` the :class:`topics.Record` when a watch met it, else
    ``None``.

    >>> str(InvalidRecord("orders", 8, [{"loc": ("id",), "msg": "Field required"}]))
    'orders #8: data does not validate: id: Field required'
    """

    def __init__(
        self,
        topic: str,
        seq: int,
        errors: list[dict[str, Any]],
        *,
        job: Job | None = None,
        claimed: list[Job] | None = None,
    ) -> None:
        super().__init__(f"{topic} #{seq}: data does not validate: {describe(errors)}")
        self.topic = topic
        self.seq = seq
        self.errors = errors
        self.job = job
        self.claimed: list[Job] = claimed or []
        self.record: Record | None = None


def describe(errors: list[dict[str, Any]]) -> str:
    """pydantic's errors in one line: ``loc: msg`` each, ``; ``-separated (the dead-letter
    reason a Worker records)."""
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        parts.append(f"{loc}: {e.get('msg', '')}" if loc else str(e.get("msg", "")))
    return "; ".join(parts)


@functools.lru_cache(maxsize=256)
def _adapter(model: Any) -> TypeAdapter[Any]:
    """One ``TypeAdapter`` per model (building one compiles its validator: not per record)."""
    from pydantic import TypeAdapter

    return TypeAdapter(model)


def validator(model: type[M], topic: str) -> Callable[[int, bytes], M]:
    """A function validating one record's raw ``data`` JSON into ``model``, or raising
    :class:`InvalidRecord` for ``topic``'s record ``seq``."""
    from pydantic import ValidationError

    adapter = _adapter(model)  # type: ignore[arg-type]  # a class is hashable

    def validate(seq: int, raw: bytes) -> M:
        try:
            return adapter.validate_json(raw)  # type: ignore[no-any-return]
        except ValidationError as err:
            raise InvalidRecord(topic, seq, _plain(err)) from None

    return validate


def _plain(err: Any) -> list[dict[str, Any]]:
    """``ValidationError.errors()`` without the ``url`` and ``ctx`` entries (``ctx`` may hold the
    exception objects a validator raised: not JSON, not picklable)."""
    return [{k: v for k, v in e.items() if k not in ("url", "ctx")} for e in err.errors(include_url=False)]


def schema_of(model: Any) -> dict[str, Any]:
    """The JSON Schema of ``model``'s payloads (pydantic's, validation mode) — documentation to
    keep next to a topic (a topic's config has no field for it: the contract defines none)."""
    return _adapter(model).json_schema()


class TypedRecord(msgspec.Struct, Generic[M]):
    """A stored record whose ``data`` was validated into a model: :class:`topics.Record` with
    ``data: M``. What ``read(..., model=M)`` and a watch with ``model=M`` yield."""

    seq: int
    ts: int
    data: M
    tag: str | None = None
    node: str | None = None
    meta: dict[str, Any] | None = None
    delay_ms: int = 0


def typed_record(raw: RawRecord, validate: Callable[[int, bytes], M]) -> TypedRecord[M]:
    """``raw`` with its ``data`` validated (its ``meta`` decoded)."""
    meta = bytes(raw.meta)
    return TypedRecord(
        seq=raw.seq,
        ts=raw.ts,
        data=validate(raw.seq, bytes(raw.data)),
        tag=raw.tag,
        node=raw.node,
        meta=msgspec.json.decode(meta) if meta else None,
        delay_ms=raw.delay_ms,
    )


def typed_watched(record: Record, validate: Callable[[int, bytes], M]) -> TypedRecord[M]:
    """A watched ``record`` with its ``data`` validated (a watch frame's data arrives decoded: it
    is re-encoded for ``validate_json``, as a claim's is); an :class:`InvalidRecord` carries
    ``record``."""
    try:
        data = validate(record.seq, msgspec.json.encode(record.data))
    except InvalidRecord as err:
        err.record = record
        raise
    return TypedRecord(
        seq=record.seq,
        ts=record.ts,
        data=data,
        tag=record.tag,
        node=record.node,
        meta=record.meta,
        delay_ms=record.delay_ms,
    )


@dataclass(slots=True)
class TypedJob(Job, Generic[M]):
    """A leased queue job whose ``data`` was validated into a model: :class:`topics.Job` (ack,
    nack, extend or dead-letter it like one) with ``data: M``."""

    data: M


def typed_jobs(jobs: list[Job], model: type[M], queue: str) -> list[TypedJob[M]]:
    """``jobs`` with their ``data`` validated into ``model``; the first that does not validate
    raises :class:`InvalidRecord` carrying it (``job``) and all of ``jobs`` (``claimed``), all
    still leased."""
    validate = validator(model, queue)
    out: list[TypedJob[M]] = []
    for job in jobs:
        try:
            out.append(typed_job(job, validate))
        except InvalidRecord as err:
            err.job, err.claimed = job, list(jobs)
            raise
    return out


def typed_job(job: Job, validate: Callable[[int, bytes], M]) -> TypedJob[M]:
    """``job`` with its ``data`` validated (a claim's data arrives decoded: it is re-encoded for
    ``validate_json``, which validates strictly as JSON would)."""
    data = validate(job.seq, msgspec.json.encode(job.data))
    return TypedJob(
        topic=job.topic,
        seq=job.seq,
        data=data,
        lease_id=job.lease_id,
        deadline=job.deadline,
        deliveries=job.deliveries,
        ts=job.ts,
        tag=job.tag,
        node=job.node,
        meta=job.meta,
        delay_ms=job.delay_ms,
    )


def typed_handler(handler: Callable[[Any], Any], model: Any, queue: str) -> Callable[[Job], Any]:
    """A Worker's ``handler`` behind validation: it gets a :class:`TypedJob`; a job that does not
    validate never reaches it and fails for good — :class:`topics.Permanent` with the validation
    errors as its reason, so the Worker dead-letters it now (never retried). Async when
    ``handler`` is (the Worker runs a sync one in its thread pool, validation included)."""
    validate = validator(model, queue)

    def checked(job: Job) -> TypedJob[Any]:
        try:
            return typed_job(job, validate)
        except InvalidRecord as err:
            raise Permanent(
                f"invalid data ({getattr(model, '__name__', model)}): {describe(err.errors)}"
            ) from None

    if is_async_handler(handler):

        async def run_async(job: Job) -> Any:
            return await handler(checked(job))

        return run_async

    def run(job: Job) -> Any:
        return handler(checked(job))

    return run
