"""Typed payloads (``topics.typed``): models in, validated models out, against a real server."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable
from datetime import datetime

import pytest
import topics
from pydantic import BaseModel, PositiveInt
from topics import InvalidRecord, TypedJob, TypedRecord, Worker, WorkerStats


class Order(BaseModel):
    id: PositiveInt
    total: float
    placed: datetime | None = None


@dataclasses.dataclass
class Point:
    x: float
    y: float


# -- writing models ----------------------------------------------------------------------------


def test_append_takes_pydantic_models_and_dataclasses(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t = name("typed")
    client.append(t, Order(id=1, total=9.5, placed=datetime(2026, 1, 2, 3, 4, 5)), tag="order:1")
    client.append_many(t, [{"data": Order(id=2, total=1)}, {"data": Point(1.5, -2)}])
    assert [r.data for r in client.read(t)] == [
        {"id": 1, "total": 9.5, "placed": "2026-01-02T03:04:05"},
        {"id": 2, "total": 1.0, "placed": None},
        {"x": 1.5, "y": -2.0},
    ]


@pytest.mark.parametrize(
    "data", [Order(id=1, total=math.nan), Point(1.0, math.inf)], ids=["pydantic", "dataclass"]
)
def test_nan_in_a_model_is_refused_with_its_path(
    client: topics.Client, name: Callable[[str], str], data: object
) -> None:
    t = name("nan")
    with pytest.raises(ValueError, match=r"^records\[1\]\.data\.(total|y) is not a JSON number"):
        client.append_many(t, [{"data": 1}, {"data": data}])
    with pytest.raises(ValueError, match=r"\.data\.(total|y) is not a JSON number"):
        client.append(t, data)
    with pytest.raises(topics.TopicNotFound):
        client.topic(t)  # nothing was written


# -- reading into models -----------------------------------------------------------------------


def test_read_with_a_model_validates_each_record_as_it_is_handed_out(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t = name("orders")
    good = [{"data": {"id": i, "total": i / 2}, "tag": f"o:{i}", "meta": {"m": i}} for i in (1, 2)]
    client.append_many(t, [*good, {"data": {"id": -3, "total": "much"}}, {"data": {"id": 4, "total": 2}}])
    records = client.read(t, model=Order)
    delivered: list[TypedRecord[Order]] = []
    with pytest.raises(InvalidRecord) as caught:
        for record in records:
            delivered.append(record)
    assert [(r.seq, r.data, r.tag, r.meta) for r in delivered] == [
        (1, Order(id=1, total=0.5), "o:1", {"m": 1}),
        (2, Order(id=2, total=1.0), "o:2", {"m": 2}),
    ]
    err = caught.value
    assert (err.topic, err.seq, err.job) == (t, 3, None)
    assert [e["loc"] for e in err.errors] == [("id",), ("total",)]
    assert f"{t} #3: data does not validate: id: " in str(err)
    assert records.position == 3  # resuming from it goes on past the bad record
    assert [r.data for r in client.read(t, records.position, model=Order)] == [Order(id=4, total=2.0)]


def test_read_with_a_dataclass_model(client: topics.Client, name: Callable[[str], str]) -> None:
    t = name("points")
    client.append(t, Point(1, 2))
    [record] = client.read(t, model=Point)
    assert isinstance(record, TypedRecord) and record.data == Point(1.0, 2.0)


async def test_async_read_and_claim_with_a_model(
    aclient: topics.AsyncClient, name: Callable[[str], str]
) -> None:
    t = name("aorders")
    await aclient.append_many(t, [{"data": Order(id=1, total=1)}, {"data": {"id": 0, "total": 1}}])
    seen: list[Order] = []
    with pytest.raises(InvalidRecord) as caught:
        async for record in aclient.read(t, model=Order):
            seen.append(record.data)
    assert seen == [Order(id=1, total=1.0)] and caught.value.seq == 2

    q = name("aq")
    await aclient.create_topic(q, type="queue")
    await aclient.append(q, Order(id=5, total=5))
    [job] = await aclient.claim(q, "w", max=5, model=Order)
    assert isinstance(job, TypedJob) and job.data == Order(id=5, total=5.0)
    assert (await aclient.ack(q, "w", [job])).acked == 1


def test_claim_with_a_model_hands_back_the_jobs_when_one_does_not_validate(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    q = name("q")
    client.create_topic(q, type="queue")
    client.append_many(q, [{"data": {"id": 1, "total": 1}}, {"data": {"id": "x", "total": 2}}])
    with pytest.raises(InvalidRecord) as caught:
        client.claim(q, "w", max=10, model=Order)
    err = caught.value
    assert err.job is not None and err.job.seq == 2 and [j.seq for j in err.claimed] == [1, 2]
    assert client.ack(q, "w", err.claimed).acked == 2  # every claimed job was still held


def _watch_until_caught_up(watch: topics.Watch[TypedRecord[Order]], t: str) -> list[object]:
    """What a typed watch hands out up to its ``CaughtUp``: each record's seq and data, and for
    each record that does not validate ``("invalid", seq, the cursor right after the raise)``."""
    out: list[object] = []
    while True:
        try:
            for event in watch:
                if isinstance(event, topics.CaughtUp):
                    return out
                if isinstance(event, topics.Records):
                    out += [(r.seq, r.data) for r in event.records]
        except InvalidRecord as err:
            assert err.topic == t and err.record is not None and err.record.seq == err.seq
            out.append(("invalid", err.seq, watch.cursors[t]))


def test_watch_with_a_model_raises_at_a_bad_record_and_goes_on_after_it(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t = name("wtyped")
    bad = [{"data": {"id": 0, "total": 1}}, {"data": {"total": 2}}]
    client.append_many(t, [{"data": Order(id=1, total=1)}, {"data": {"id": 2, "total": 2}}, bad[0]])
    client.append_many(t, [{"data": {"id": 4, "total": 4}}, bad[1], {"data": {"id": 6, "total": 6}}])
    with client.watch({t: 0}, model=Order) as watch:
        handed = _watch_until_caught_up(watch, t)
        assert handed == [
            (1, Order(id=1, total=1.0)),
            (2, Order(id=2, total=2.0)),
            ("invalid", 3, 3),  # the records before it came first; the cursor is just past it
            (4, Order(id=4, total=4.0)),
            ("invalid", 5, 5),
            (6, Order(id=6, total=6.0)),
        ]
        assert watch.cursors == {t: 6}
        client.append(t, Order(id=7, total=7))
        event = next(iter(watch))
        assert isinstance(event, topics.Records)
        assert [(r.seq, r.data) for r in event.records] == [(7, Order(id=7, total=7.0))]


def test_a_watch_stopped_at_a_bad_record_resumes_just_past_it(
    client: topics.Client, name: Callable[[str], str]
) -> None:
    t = name("wstop")
    client.append_many(
        t, [{"data": {"id": 0, "total": 0}}, *({"data": {"id": i, "total": i}} for i in (2, 3))]
    )
    with client.watch({t: 0}, model=Order) as watch, pytest.raises(InvalidRecord) as caught:
        next(iter(watch))
    assert caught.value.seq == 1 and watch.cursors == {t: 1}
    with client.watch(watch.cursors, model=Order) as again:
        event = next(iter(again))
    assert isinstance(event, topics.Records) and [r.seq for r in event.records] == [2, 3]


async def test_async_watch_with_a_model(aclient: topics.AsyncClient, name: Callable[[str], str]) -> None:
    t = name("awtyped")
    await aclient.append_many(
        t, [{"data": {"id": 1, "total": 1}}, {"data": {"id": "x"}}, {"data": Order(id=3, total=3)}]
    )
    handed: list[object] = []
    async with aclient.watch({t: 0}, model=Order) as watch:
        while len(handed) < 3:
            try:
                async for event in watch:
                    if isinstance(event, topics.Records):
                        handed += [r.data for r in event.records]
                    if len(handed) == 3:
                        break
            except InvalidRecord as err:
                handed.append(("invalid", err.seq))
    assert handed == [Order(id=1, total=1.0), ("invalid", 2), Order(id=3, total=3.0)]


# -- the Worker --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["push", "poll"])
def test_the_worker_dead_letters_a_job_that_does_not_validate(
    mode: str, client: topics.Client, name: Callable[[str], str]
) -> None:
    dlq = name("dlq")
    q = name("wq")
    client.create_topic(q, type="queue", max_deliveries=5, dead_letter=dlq)
    client.append_many(
        q, [{"data": Order(id=1, total=1)}, {"data": {"id": 2}}, {"data": {"id": 3, "total": 3}}]
    )
    seen: list[Order] = []

    def handle(job: TypedJob[Order]) -> None:
        assert isinstance(job.data, Order)
        seen.append(job.data)

    result = Worker(client, q, handle, mode=mode, model=Order).drain(timeout_s=20)
    assert result == WorkerStats(processed=2, failed=1, dead_lettered=1)
    assert sorted(o.id for o in seen) == [1, 3]
    [dead] = client.read(dlq)
    assert dead.data == {"id": 2}
    assert dead.meta is not None
    assert dead.meta["$dead_letter_reason"] == "invalid data (Order): total: Field required"


async def test_an_async_handler_gets_typed_jobs(
    aclient: topics.AsyncClient, name: Callable[[str], str]
) -> None:
    q = name("awq")
    await aclient.create_topic(q, type="queue")
    await aclient.append_many(q, [{"data": Point(i, i)} for i in range(3)])
    seen: list[Point] = []

    async def handle(job: TypedJob[Point]) -> None:
        await asyncio.sleep(0)
        seen.append(job.data)

    assert await Worker(aclient, q, handle, model=Point).drain_async(timeout_s=20) == WorkerStats(processed=3)
    assert sorted(p.x for p in seen) == [0.0, 1.0, 2.0]


def test_schema_of_gives_the_models_json_schema() -> None:
    schema = topics.schema_of(Order)
    assert schema["title"] == "Order" and schema["required"] == ["id", "total"]
    assert schema["properties"]["id"] == {"exclusiveMinimum": 0, "title": "Id", "type": "integer"}
