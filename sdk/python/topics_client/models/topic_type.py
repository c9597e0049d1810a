from enum import StrEnum


class TopicType(StrEnum):
    LOG = "log"
    QUEUE = "queue"

    def __str__(self) -> str:
        return str(self.value)
