"""The durable side of the engine: everything that lives in ``TOPICS_DATA_DIR``.

``directory.DataDirectory`` is the lifecycle (lock, recover, open, checkpoint, close);
``walpersistence.WalPersistence`` persists engine mutations through the write-ahead log;
``sealing`` moves hot records into segments; ``checkpoint`` snapshots and trims the WAL;
``recovery`` rebuilds the engine from a snapshot, its segments and the WAL tail. Byte formats
live one layer down, in ``topics_engine.storage``.

The public face — what the server imports — is re-exported here: the lifecycle
(:class:`DataDirectory`, :class:`DataDirLocked`), its segment setting (:class:`SegmentPolicy`),
the read-only view of the WAL (:class:`WalView`) and the refusal of a file in a format version
this server does not read (:class:`UnsupportedFormat`).
"""

from ..storage.versions import UnsupportedFormat
from .cacheview import CacheView
from .directory import DataDirectory, DataDirLocked
from .sealing import SegmentPolicy
from .walview import WalView

__all__ = ["CacheView", "DataDirLocked", "DataDirectory", "SegmentPolicy", "UnsupportedFormat", "WalView"]
