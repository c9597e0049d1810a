from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance
    from ..models.record import Record
    from ..models.tombstone import Tombstone


T = TypeVar("T", bound="DiffResponse")


@_attrs_define
class DiffResponse:
    """A batch of records after the cursor, with the continuation cursor and watermarks.

    Attributes:
        topic (str):
        records (list[Record]): Up to `limit` records with `$seq > from_seq`, ascending, after skipping TTL-expired,
            deleted and own-node records. May be empty while the cursor advanced.
        from_seq (int): The exclusive cursor this read started after: the request's `from_seq`, or where its `from_ts`
            resolved to (0: from the earliest retained record). 0 too after a `recreated` tombstone (the read restarted from
            the earliest of the new topic).
        next_from_seq (int): Pass back as `from_seq`; the `$seq` of the last examined record (filtered records still
            advance it).
        head_seq (int):
        earliest_seq (int):
        caught_up (bool): True when `next_from_seq == head_seq` — the reliable "no more right now" signal.
        tombstone (None | Tombstone): null, or a gap marker (at most one per response).
        lag (int): `head_seq - next_from_seq`.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    topic: str
    records: list[Record]
    from_seq: int
    next_from_seq: int
    head_seq: int
    earliest_seq: int
    caught_up: bool
    tombstone: None | Tombstone
    lag: int
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.tombstone import Tombstone  # noqa: PLC0415

        topic = self.topic

        records = []
        for records_item_data in self.records:
            records_item = records_item_data.to_dict()
            records.append(records_item)

        from_seq = self.from_seq

        next_from_seq = self.next_from_seq

        head_seq = self.head_seq

        earliest_seq = self.earliest_seq

        caught_up = self.caught_up

        tombstone: dict[str, Any] | None
        if isinstance(self.tombstone, Tombstone):
            tombstone = self.tombstone.to_dict()
        else:
            tombstone = self.tombstone

        lag = self.lag

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "records": records,
                "from_seq": from_seq,
                "next_from_seq": next_from_seq,
                "head_seq": head_seq,
                "earliest_seq": earliest_seq,
                "caught_up": caught_up,
                "tombstone": tombstone,
                "lag": lag,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415
        from ..models.record import Record  # noqa: PLC0415
        from ..models.tombstone import Tombstone  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        records = []
        _records = d.pop("records")
        for records_item_data in _records:
            records_item = Record.from_dict(records_item_data)

            records.append(records_item)

        from_seq = d.pop("from_seq")

        next_from_seq = d.pop("next_from_seq")

        head_seq = d.pop("head_seq")

        earliest_seq = d.pop("earliest_seq")

        caught_up = d.pop("caught_up")

        def _parse_tombstone(data: object) -> None | Tombstone:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                tombstone_type_0 = Tombstone.from_dict(data)

                return tombstone_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Tombstone, data)

        tombstone = _parse_tombstone(d.pop("tombstone"))

        lag = d.pop("lag")

        performance = Performance.from_dict(d.pop("performance"))

        diff_response = cls(
            topic=topic,
            records=records,
            from_seq=from_seq,
            next_from_seq=next_from_seq,
            head_seq=head_seq,
            earliest_seq=earliest_seq,
            caught_up=caught_up,
            tombstone=tombstone,
            lag=lag,
            performance=performance,
        )

        diff_response.additional_properties = d
        return diff_response

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
