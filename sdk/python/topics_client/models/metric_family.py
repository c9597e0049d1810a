from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.metric_sample import MetricSample


T = TypeVar("T", bound="MetricFamily")


@_attrs_define
class MetricFamily:
    """
    Attributes:
        type_ (str): `gauge`, `counter` or `histogram` (open).
        help_ (str):
        samples (list[MetricSample]):
    """

    type_: str
    help_: str
    samples: list[MetricSample]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        help_ = self.help_

        samples = []
        for samples_item_data in self.samples:
            samples_item = samples_item_data.to_dict()
            samples.append(samples_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
                "help": help_,
                "samples": samples,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metric_sample import MetricSample  # noqa: PLC0415

        d = dict(src_dict)
        type_ = d.pop("type")

        help_ = d.pop("help")

        samples = []
        _samples = d.pop("samples")
        for samples_item_data in _samples:
            samples_item = MetricSample.from_dict(samples_item_data)

            samples.append(samples_item)

        metric_family = cls(
            type_=type_,
            help_=help_,
            samples=samples,
        )

        metric_family.additional_properties = d
        return metric_family

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
