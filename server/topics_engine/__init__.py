"""topics_engine — the storage engine behind the /v0 API. No web framework imports.

Layers, lowest first (imports only go downward; ``tests/test_architecture.py`` enforces it):

1. ``storage`` (with the C codec ``_codec``) — bytes on disk: the filesystem seam, WAL frames
   and writer, payload formats, segments, snapshots. Knows nothing above it.
2. the model — clock, config, errors, limits, records, topic, leases (a queue's lease
   projection), results, and the :mod:`persistence` seam.
3. :class:`Engine` — the registry of topics and the operations on topics, writes, reads and deletes.
4. features composed over the engine — :class:`queues.Queues`, ``routers``,
   ``schedules`` (an extension: timed appends) and ``watch`` — and ``datadir``, the
   durable side (WAL persistence, sealing, checkpoints, recovery, the data-directory
   lifecycle).
"""

from .clock import Clock, ManualClock, SystemClock
from .config import Discard, Durability, TopicConfig, TopicType
from .engine import Engine
from .errors import TopicsError
from .limits import Limits
from .queues import Queues

__all__ = [
    "Clock",
    "Discard",
    "Durability",
    "Engine",
    "Limits",
    "ManualClock",
    "Queues",
    "SystemClock",
    "TopicConfig",
    "TopicType",
    "TopicsError",
]
