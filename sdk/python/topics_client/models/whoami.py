from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="Whoami")


@_attrs_define
class Whoami:
    """The caller's identity and permissions (`GET /v0/whoami`). `auth` is `keys`
    when the server checks API keys, `dev` when none are configured (then
    `key_id` and `key` are null, `scopes` holds all four and `prefixes` is
    empty). Never the key's secret.

        Attributes:
            auth (str): `keys` (API keys are checked) or `dev` (no keys configured: every request passes). Open: a client
                accepts any other value as well.
            key_id (int | None): The key's 1-based position in `TOPICS_API_KEYS` (stable for the process lifetime); null in
                dev mode.
            key (None | str): How logs and errors name the key (`key #3`); null in dev mode.
            scopes (list[str]): The key's scopes, sorted (`admin`, `delete`, `read`, `write`).
            prefixes (list[str]): The byte prefixes of the topic/router/schedule names the key may use; empty means any
                name.
            performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
                clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
                `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    auth: str
    key_id: int | None
    key: None | str
    scopes: list[str]
    prefixes: list[str]
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        auth = self.auth

        key_id: int | None
        key_id = self.key_id

        key: None | str
        key = self.key

        scopes = self.scopes

        prefixes = self.prefixes

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "auth": auth,
                "key_id": key_id,
                "key": key,
                "scopes": scopes,
                "prefixes": prefixes,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        auth = d.pop("auth")

        def _parse_key_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        key_id = _parse_key_id(d.pop("key_id"))

        def _parse_key(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        key = _parse_key(d.pop("key"))

        scopes = cast(list[str], d.pop("scopes"))

        prefixes = cast(list[str], d.pop("prefixes"))

        performance = Performance.from_dict(d.pop("performance"))

        whoami = cls(
            auth=auth,
            key_id=key_id,
            key=key,
            scopes=scopes,
            prefixes=prefixes,
            performance=performance,
        )

        whoami.additional_properties = d
        return whoami

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
