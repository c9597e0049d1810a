"""The per-process server context handlers receive: the engine and process lifecycle state."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from topics_engine import Engine

VERSION = "0.1.0"


@dataclass
class ServerContext:
    engine: Engine
    started: float = field(default_factory=time.monotonic)
    shutting_down: bool = False

    @property
    def uptime_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)
