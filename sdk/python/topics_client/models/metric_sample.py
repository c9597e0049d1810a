from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.metric_sample_labels import MetricSampleLabels


T = TypeVar("T", bound="MetricSample")


@_attrs_define
class MetricSample:
    """One sample; a histogram has `_bucket` (with an `le` label), `_sum` and `_count` samples.

    Attributes:
        name (str):
        labels (MetricSampleLabels):
        value (float):
    """

    name: str
    labels: MetricSampleLabels
    value: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        labels = self.labels.to_dict()

        value = self.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "labels": labels,
                "value": value,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metric_sample_labels import MetricSampleLabels  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        labels = MetricSampleLabels.from_dict(d.pop("labels"))

        value = d.pop("value")

        metric_sample = cls(
            name=name,
            labels=labels,
            value=value,
        )

        metric_sample.additional_properties = d
        return metric_sample

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
