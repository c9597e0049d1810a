from enum import StrEnum


class WatchConsistency(StrEnum):
    EVENTUAL = "eventual"
    STRONG = "strong"

    def __str__(self) -> str:
        return str(self.value)
