"""The write path in process: what decoding an append body and appending its records cost, with
no HTTP and no load generator, so a checkout can be compared with another on a noisy VM (best of
several rounds; run each checkout's own interpreter).

    .venv/bin/python -m bench.write_path            # prints one JSON object

Measures (µs per operation, the best round):

* ``decode_1`` / ``decode_100``: the server's compiled ``AppendRequest`` decoder
  (``topics_server.bodies``) on a body of 1 / 100 records of ~80 bytes of data each;
* ``append_1``: ``Engine.append`` of one record given as decoded columns
  (``NewRecords.from_objects``, as the HTTP handler builds them), in memory, on a capped topic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import msgspec
from topics_engine import Engine, Limits, ManualClock
from topics_engine.records import NewRecords
from topics_server.bodies import BodyCompiler, BodyDecoder
from topics_server.spec import load_document

DATA = b'{"id":1,"kind":"click","page":"/home","ms":12.5,"user":"u-0001"}'


def best_us(fn: Callable[[], object], n: int, rounds: int = 7) -> float:
    """The fastest of ``rounds`` rounds of ``n`` calls, in µs per call (after a warm-up)."""
    for _ in range(n // 5):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def body(records: int) -> bytes:
    return b'{"records":[' + b",".join([b'{"data":' + DATA + b"}"] * records) + b"]}"


def main() -> None:
    compiled = BodyCompiler(load_document()).compile({"$ref": "#/components/schemas/AppendRequest"})
    decoder = BodyDecoder(compiled)
    one, hundred = body(1), body(100)
    decoded = decoder.decode(one).records
    engine = Engine(ManualClock(1_700_000_000_000), Limits())
    engine.put_topic("t", {"cap_records": 1000})

    def append() -> None:
        engine.append("t", NewRecords.from_objects(decoded, None, msgspec.UNSET, msgspec.json.encode))

    print(
        json.dumps(
            {
                "decode_1_us": round(best_us(lambda: decoder.decode(one), 50_000), 3),
                "decode_100_us": round(best_us(lambda: decoder.decode(hundred), 3_000), 3),
                "append_1_us": round(best_us(append, 30_000), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
