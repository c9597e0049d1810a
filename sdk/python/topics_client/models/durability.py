from enum import StrEnum


class Durability(StrEnum):
    DISK = "disk"
    EPHEMERAL = "ephemeral"
    FSYNC = "fsync"
    MEMORY = "memory"

    def __str__(self) -> str:
        return str(self.value)
