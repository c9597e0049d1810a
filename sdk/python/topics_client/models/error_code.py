from enum import StrEnum


class ErrorCode(StrEnum):
    BATCH_TOO_LARGE = "batch_too_large"
    CONSUMER_NOT_FOUND = "consumer_not_found"
    CURSOR_BEHIND = "cursor_behind"
    CURSOR_BEYOND_HEAD = "cursor_beyond_head"
    FORBIDDEN = "forbidden"
    INTERNAL = "internal"
    INVALID_REQUEST = "invalid_request"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    NOT_A_QUEUE = "not_a_queue"
    NOT_FOUND = "not_found"
    NOT_READY = "not_ready"
    NO_DEAD_LETTER = "no_dead_letter"
    NO_SUCH_CONSUMER = "no_such_consumer"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    RECORD_TOO_LARGE = "record_too_large"
    ROUTER_CYCLE = "router_cycle"
    ROUTER_NOT_FOUND = "router_not_found"
    SCHEDULE_NOT_FOUND = "schedule_not_found"
    SHUTTING_DOWN = "shutting_down"
    THROTTLED = "throttled"
    TOPIC_EXISTS_INCOMPATIBLE = "topic_exists_incompatible"
    TOPIC_FULL = "topic_full"
    TOPIC_NOT_EMPTY = "topic_not_empty"
    TOPIC_NOT_FOUND = "topic_not_found"
    UNAUTHORIZED = "unauthorized"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"

    def __str__(self) -> str:
        return str(self.value)
