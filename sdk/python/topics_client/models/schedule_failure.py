from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.error_code import ErrorCode

T = TypeVar("T", bound="ScheduleFailure")


@_attrs_define
class ScheduleFailure:
    """Why the last attempt to run failed (the append's error), and when.

    Attributes:
        code (ErrorCode | str):
        message (str):
        at_ms (int):
    """

    code: ErrorCode | str
    message: str
    at_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code: str
        if isinstance(self.code, ErrorCode):
            code = self.code.value
        else:
            code = self.code

        message = self.message

        at_ms = self.at_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
                "at_ms": at_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_code(data: object) -> ErrorCode | str:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                code_type_0 = ErrorCode(data)

                return code_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ErrorCode | str, data)

        code = _parse_code(d.pop("code"))

        message = d.pop("message")

        at_ms = d.pop("at_ms")

        schedule_failure = cls(
            code=code,
            message=message,
            at_ms=at_ms,
        )

        schedule_failure.additional_properties = d
        return schedule_failure

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
