from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.error_code import ErrorCode
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_body_detail import ErrorBodyDetail


T = TypeVar("T", bound="ErrorBody")


@_attrs_define
class ErrorBody:
    """The `error` member of the error envelope.

    Attributes:
        code (ErrorCode | str): Stable machine-readable snake_case code; clients branch on it. One of `ErrorCode` today;
            open, so a client accepts (and treats as a generic error of the HTTP status) a code added later.
        message (str): Human-readable; may change between versions; never parse it.
        detail (ErrorBodyDetail | Unset): Optional structured context (e.g. `topic`, `field`, `limit`, `max`,
            `retry_after_ms`, `replay_progress`). May be absent.
    """

    code: ErrorCode | str
    message: str
    detail: ErrorBodyDetail | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code: str
        if isinstance(self.code, ErrorCode):
            code = self.code.value
        else:
            code = self.code

        message = self.message

        detail: dict[str, Any] | Unset = UNSET
        if not isinstance(self.detail, Unset):
            detail = self.detail.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
            }
        )
        if detail is not UNSET:
            field_dict["detail"] = detail

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_body_detail import ErrorBodyDetail  # noqa: PLC0415

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

        _detail = d.pop("detail", UNSET)
        detail: ErrorBodyDetail | Unset
        if isinstance(_detail, Unset):
            detail = UNSET
        else:
            detail = ErrorBodyDetail.from_dict(_detail)

        error_body = cls(
            code=code,
            message=message,
            detail=detail,
        )

        error_body.additional_properties = d
        return error_body

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
