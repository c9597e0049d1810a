"""topics — the Python SDK of the topics event engine.

>>> import topics
>>> client = topics.Client()              # TOPICS_URL / TOPICS_API_KEY, else http://127.0.0.1:4000
>>> client.append("greetings", {"hello": "world"}).seqs
[1]
>>> [r.data for r in client.read("greetings")]
[{'hello': 'world'}]

``topics.Client`` (blocking) and ``topics.AsyncClient`` (asyncio) have the same methods:
topics (``create_topic``, ``topic``, ``list_topics``, ``delete_topic``), writes (``append``,
``append_many``), reads (``read``, ``delete_records``, ``watch``), queues (``claim``, ``ack``,
``nack``, ``extend``, ``redrive``) and routers.
Errors are :class:`topics.TopicsError` subclasses, one per ``error.code``.
"""

from ._transport import Settings
from .client import AsyncClient, AsyncReadIterator, Client, ReadIterator
from .errors import (
    BatchTooLarge,
    ConnectionError,
    DataLoss,
    Forbidden,
    Internal,
    InvalidRequest,
    MethodNotAllowed,
    NotAcceptable,
    NotAQueue,
    NotFound,
    NotReady,
    PayloadTooLarge,
    RecordTooLarge,
    RouterCycle,
    RouterNotFound,
    ShuttingDown,
    Throttled,
    TopicExistsIncompatible,
    TopicFull,
    TopicNotEmpty,
    TopicNotFound,
    TopicsError,
    Unauthorized,
    UnsupportedMediaType,
)
from .models import (
    AckResult,
    AppendResult,
    CaughtUp,
    ExtendResult,
    Health,
    Job,
    NackResult,
    QueueCounters,
    RawRecord,
    Readiness,
    Record,
    Records,
    RouterInfo,
    Tombstone,
    TopicConfig,
    TopicDeleted,
    TopicDeletion,
    TopicInfo,
    TopicState,
    TopicSummary,
    WatchEvent,
)
from .watch import AsyncWatch, Watch
from .worker import Backoff, Retry, Worker, WorkerStats

__all__ = [
    "Settings",
    "AckResult",
    "AppendResult",
    "AsyncClient",
    "AsyncReadIterator",
    "AsyncWatch",
    "Backoff",
    "BatchTooLarge",
    "CaughtUp",
    "Client",
    "ConnectionError",
    "DataLoss",
    "ExtendResult",
    "Forbidden",
    "Health",
    "Internal",
    "InvalidRequest",
    "Job",
    "MethodNotAllowed",
    "NackResult",
    "NotAQueue",
    "NotAcceptable",
    "NotFound",
    "NotReady",
    "PayloadTooLarge",
    "QueueCounters",
    "ReadIterator",
    "Readiness",
    "RawRecord",
    "Record",
    "RecordTooLarge",
    "Records",
    "Retry",
    "RouterCycle",
    "RouterInfo",
    "RouterNotFound",
    "ShuttingDown",
    "Throttled",
    "Tombstone",
    "TopicConfig",
    "TopicDeleted",
    "TopicDeletion",
    "TopicExistsIncompatible",
    "TopicFull",
    "TopicInfo",
    "TopicNotEmpty",
    "TopicNotFound",
    "TopicState",
    "TopicSummary",
    "TopicsError",
    "Unauthorized",
    "UnsupportedMediaType",
    "Watch",
    "WatchEvent",
    "Worker",
    "WorkerStats",
]
