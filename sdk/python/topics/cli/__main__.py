"""``python -m topics.cli``: the ``topics`` command."""

import sys

from . import main

sys.exit(main())
