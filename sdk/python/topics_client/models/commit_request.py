from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="CommitRequest")


@_attrs_define
class CommitRequest:
    """A named consumer's commit.

    Attributes:
        seq (int): The new cursor — the last seq handled (typically a diff's `next_from_seq`). Above the topic's
            `head_seq` is `409 cursor_beyond_head`; below the committed cursor is `409 cursor_behind` unless `force`.
        force (bool | Unset): Allow the cursor to move back (a rewind). Default false.
    """

    seq: int
    force: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        seq = self.seq

        force = self.force

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "seq": seq,
            }
        )
        if force is not UNSET:
            field_dict["force"] = force

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        seq = d.pop("seq")

        force = d.pop("force", UNSET)

        commit_request = cls(
            seq=seq,
            force=force,
        )

        return commit_request
