from enum import StrEnum


class TombstoneReason(StrEnum):
    CAP = "cap"
    FROM_SEQ_TOO_OLD = "from_seq_too_old"
    MIXED = "mixed"
    RECREATED = "recreated"
    SOURCE_TRIM = "source_trim"
    TTL = "ttl"

    def __str__(self) -> str:
        return str(self.value)
