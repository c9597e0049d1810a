from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_body import ErrorBody
    from ..models.performance import Performance


T = TypeVar("T", bound="Error")


@_attrs_define
class Error:
    """The canonical error envelope carried by every non-2xx response — the one
    error schema of the document (each error response narrows the codes it
    carries in its description, not in a schema). The presence of a top-level
    `error` key is the only success/failure discriminator.

        Attributes:
            error (ErrorBody): The `error` member of the error envelope.
            performance (Performance | Unset): Server-side timings and counters for this request. Best-effort and additive;
                clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
                `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    error: ErrorBody
    performance: Performance | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        error = self.error.to_dict()

        performance: dict[str, Any] | Unset = UNSET
        if not isinstance(self.performance, Unset):
            performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
            }
        )
        if performance is not UNSET:
            field_dict["performance"] = performance

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_body import ErrorBody  # noqa: PLC0415
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        error = ErrorBody.from_dict(d.pop("error"))

        _performance = d.pop("performance", UNSET)
        performance: Performance | Unset
        if isinstance(_performance, Unset):
            performance = UNSET
        else:
            performance = Performance.from_dict(_performance)

        error = cls(
            error=error,
            performance=performance,
        )

        error.additional_properties = d
        return error

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
