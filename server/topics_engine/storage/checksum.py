"""The one CRC of the data directory: CRC-32 (ISO-HDLC, zlib's ``crc32``) — every WAL frame,
snapshot, segment index and segment chunk is checked with it.

Computed by ISA-L (``isal.isal_zlib.crc32``): the same function as ``zlib.crc32``, bit for bit,
at ~50 GiB/s instead of ~2 GiB/s (SIMD carry-less multiplication), which matters where a whole
record batch is checked — every 1 MiB chunk read back from a segment, every large append framed
into the WAL. Files written with ``zlib.crc32`` (every older data directory) read back the same.
"""

from __future__ import annotations

from isal.isal_zlib import crc32

__all__ = ["crc32"]
