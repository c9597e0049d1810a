"""Type stub for the broadcast send (``broadcast.c``)."""

from collections.abc import Sequence

def send_all(fds: Sequence[int], data: bytes, /) -> list[int]:
    """``data`` sent to every socket of ``fds`` without blocking (MSG_DONTWAIT | MSG_NOSIGNAL,
    EINTR retried, the GIL released): per fd the bytes it took (0 if it would block), or
    ``-errno``."""
