from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.metrics_snapshot_metrics import MetricsSnapshotMetrics


T = TypeVar("T", bound="MetricsSnapshot")


@_attrs_define
class MetricsSnapshot:
    """The metric families of `GET /v0/metrics`, as JSON (`Accept: application/json`).

    Attributes:
        metrics (MetricsSnapshotMetrics): Metric families by name (`topics_topics`, `topics_wal_fsync_latency_us`, ...).
    """

    metrics: MetricsSnapshotMetrics
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        metrics = self.metrics.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "metrics": metrics,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.metrics_snapshot_metrics import MetricsSnapshotMetrics  # noqa: PLC0415

        d = dict(src_dict)
        metrics = MetricsSnapshotMetrics.from_dict(d.pop("metrics"))

        metrics_snapshot = cls(
            metrics=metrics,
        )

        metrics_snapshot.additional_properties = d
        return metrics_snapshot

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
