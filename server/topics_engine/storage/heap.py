"""Giving the memory of released record batches back to the operating system.

When sealed chunks go cold (``sealing.release_sealed``) their batches — megabytes at a time —
are freed, and a full chunk cache frees a cold batch for every one it loads. glibc's allocator
serves blocks of that size from its heap (its mmap threshold adapts upwards once such a block is
freed, which is what makes reading cold chunks back cheap: a freed batch's pages are reused
without page faults), but it returns free pages in the middle of the heap to the system only on
request. Without that request, the pages of a filled and sealed log stay in the resident set:
measured 172 MB after 1M × 1 KB records against 102 MB with a trim after each seal
(docs/BENCHMARKS.md).

:func:`trim` makes that request (``malloc_trim(0)``: ~3 ms for a heap of 100–200 MB). ctypes
releases the GIL for the call, so it runs off the event loop — on the segment thread after a
seal or checkpoint (one per 16 MiB of a topic's records at most), on a reader thread after the
chunk cache churned a quarter of its capacity (``coldstore``; at most once a second) — and
meanwhile an allocation on the event loop that its thread cache cannot serve may wait for the
arena lock the trim holds: at those rates, noise. With another C library it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        fn = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    trim: Callable[[int], int] = fn
    return trim


_TRIM = _malloc_trim()


def trim() -> None:
    """Return the allocator's free pages to the system (glibc), else nothing."""
    if _TRIM is not None:
        _TRIM(0)
