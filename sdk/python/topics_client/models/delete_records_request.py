from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.match_op import MatchOp
from ..types import UNSET, Unset

T = TypeVar("T", bound="DeleteRecordsRequest")


@_attrs_define
class DeleteRecordsRequest:
    """At least one of `before_seq` / `match` is required (`minProperties`; `400 invalid_request` otherwise); both are
    ANDed.

        Attributes:
            before_seq (int | Unset): Delete every record with `$seq < before_seq`.
            match (list[Literal['tag'] | MatchOp | str] | str | Unset): Tag predicate: `["tag","Eq","X"]` exact match, or
                `["tag","Glob","X*"]`
                trailing-prefix match (a literal prefix followed by a single `*`; full
                glob/regex is excluded). A bare string is shorthand for Eq. Another op, or a
                Glob without a trailing `*`, is `400 invalid_request`.
    """

    before_seq: int | Unset = UNSET
    match: list[Literal["tag"] | MatchOp | str] | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        before_seq = self.before_seq

        match: list[Literal["tag"] | str] | str | Unset
        if isinstance(self.match, Unset):
            match = UNSET
        elif isinstance(self.match, list):
            match = []
            for componentsschemas_match_type_1_item_data in self.match:
                componentsschemas_match_type_1_item: Literal["tag"] | str
                if isinstance(componentsschemas_match_type_1_item_data, MatchOp):
                    componentsschemas_match_type_1_item = componentsschemas_match_type_1_item_data.value
                else:
                    componentsschemas_match_type_1_item = componentsschemas_match_type_1_item_data
                match.append(componentsschemas_match_type_1_item)

        else:
            match = self.match

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if before_seq is not UNSET:
            field_dict["before_seq"] = before_seq
        if match is not UNSET:
            field_dict["match"] = match

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        before_seq = d.pop("before_seq", UNSET)

        def _parse_match(data: object) -> list[Literal["tag"] | MatchOp | str] | str | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                componentsschemas_match_type_1 = []
                _componentsschemas_match_type_1 = data
                for componentsschemas_match_type_1_item_data in _componentsschemas_match_type_1:

                    def _parse_componentsschemas_match_type_1_item(
                        data: object,
                    ) -> Literal["tag"] | MatchOp | str:
                        componentsschemas_match_type_1_item_type_0 = cast(Literal["tag"], data)
                        if componentsschemas_match_type_1_item_type_0 != "tag":
                            raise ValueError(
                                f"/components/schemas/Match_type_1_item_type_0 must match const 'tag', got '{componentsschemas_match_type_1_item_type_0}'"
                            )
                        return componentsschemas_match_type_1_item_type_0
                        try:
                            if not isinstance(data, str):
                                raise TypeError()
                            componentsschemas_match_type_1_item_type_1 = MatchOp(data)

                            return componentsschemas_match_type_1_item_type_1
                        except (TypeError, ValueError, AttributeError, KeyError):
                            pass
                        return cast(Literal["tag"] | MatchOp | str, data)

                    componentsschemas_match_type_1_item = _parse_componentsschemas_match_type_1_item(
                        componentsschemas_match_type_1_item_data
                    )

                    componentsschemas_match_type_1.append(componentsschemas_match_type_1_item)

                return componentsschemas_match_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Literal["tag"] | MatchOp | str] | str | Unset, data)

        match = _parse_match(d.pop("match", UNSET))

        delete_records_request = cls(
            before_seq=before_seq,
            match=match,
        )

        return delete_records_request
