from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance
    from ..models.watch_session_topics import WatchSessionTopics


T = TypeVar("T", bound="WatchSession")


@_attrs_define
class WatchSession:
    """A created watch session.

    Attributes:
        wid (str): The session id — an unguessable random capability (≥128 bits, base64url) bound to the creating key
            and its scope.
        stream_url (str): Relative URL of the session's SSE stream, `/v0/watch/<wid>` (`GET`, EventSource-compatible).
        session_ttl_ms (int): The session is reclaimed after this long with no open stream (300000).
        topics (WatchSessionTopics): Each watched topic (unknown topics dropped by `?lenient=true` are absent) → its
            resolved start and watermarks, from which the client computes lag before streaming.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    wid: str
    stream_url: str
    session_ttl_ms: int
    topics: WatchSessionTopics
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        wid = self.wid

        stream_url = self.stream_url

        session_ttl_ms = self.session_ttl_ms

        topics = self.topics.to_dict()

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "wid": wid,
                "stream_url": stream_url,
                "session_ttl_ms": session_ttl_ms,
                "topics": topics,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415
        from ..models.watch_session_topics import WatchSessionTopics  # noqa: PLC0415

        d = dict(src_dict)
        wid = d.pop("wid")

        stream_url = d.pop("stream_url")

        session_ttl_ms = d.pop("session_ttl_ms")

        topics = WatchSessionTopics.from_dict(d.pop("topics"))

        performance = Performance.from_dict(d.pop("performance"))

        watch_session = cls(
            wid=wid,
            stream_url=stream_url,
            session_ttl_ms=session_ttl_ms,
            topics=topics,
            performance=performance,
        )

        watch_session.additional_properties = d
        return watch_session

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
