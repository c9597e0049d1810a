from enum import StrEnum


class MatchOp(StrEnum):
    EQ = "Eq"
    GLOB = "Glob"

    def __str__(self) -> str:
        return str(self.value)
