from enum import StrEnum


class Discard(StrEnum):
    OLD = "old"
    REJECT = "reject"

    def __str__(self) -> str:
        return str(self.value)
