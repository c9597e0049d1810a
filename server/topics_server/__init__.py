"""topics_server — the HTTP layer: connexion routing and spec validation, thin handlers, the
error envelope, settings and the ``topics`` CLI. Imports go one way: server -> engine."""

import warnings

# connexion imports starlette.testclient at import time, which warns about httpx; irrelevant
# to serving, and it would otherwise be printed at every start.
warnings.filterwarnings("ignore", message=".*starlette.testclient.*")
