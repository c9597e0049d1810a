"""How a benchmark script hands over its result: one JSON object on stdout, and the same text
in the ``--out`` file when one is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(result: Any, out: Path | None, indent: int = 2) -> None:
    """Print ``result`` as JSON and, with ``out``, write the same text there."""
    text = json.dumps(result, indent=indent)
    print(text)
    if out is not None:
        out.write_text(text + "\n")
