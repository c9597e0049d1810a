"""topics_engine — the storage engine behind the /v0 API. No web framework imports.

Public surface: :class:`Engine`, the clocks, :class:`Limits`, the config types and the error
hierarchy. Everything else is private to the package.
"""

from .clock import Clock, ManualClock, SystemClock
from .config import Discard, Durability, TopicConfig, TopicType
from .engine import AppendResult, DiffResult, Engine, PutResult
from .errors import TopicsError
from .limits import Limits

__all__ = [
    "AppendResult",
    "Clock",
    "DiffResult",
    "Discard",
    "Durability",
    "Engine",
    "Limits",
    "ManualClock",
    "PutResult",
    "SystemClock",
    "TopicConfig",
    "TopicType",
    "TopicsError",
]
