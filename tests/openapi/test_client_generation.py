"""``openapi/v0.yaml`` is fit for client generation (docs/DECISIONS.md, "Fit for client
generation").

openapi-python-client (pinned, see ``scripts/gen_client.py`` and the ``dev`` extra) generates a
client from the document — minus the streaming operations (server-sent events and the WebSocket
upgrade), which a generator cannot stream (the high-level SDK hand-writes them) — and must do so
without a single warning, and exactly the committed ``sdk/python/topics_client``. The generated
package is then imported and exercised offline (an ``httpx.MockTransport``):

- a model built with one field sends exactly that field (no request ``default:`` leaks into a
  partial ``PUT``), and a query parameter the caller did not set is not sent;
- there is one ``Error`` model, no per-status copies, and every error status parses into it;
- responses with enum values and fields added later parse without raising (open enums,
  open objects), while request enums stay closed.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from scripts import gen_client
from tests.contract import CONTRACT_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = gen_client.SPEC_PATH
PACKAGE = gen_client.PACKAGE
HTTP_METHODS = gen_client.HTTP_METHODS

# Anything the generator prints besides its "Generating <dir>" line is a finding.
WARNING_RE = re.compile(r"warning|could not|cannot|skipping|unsupported|unable|invalid", re.IGNORECASE)

# A full resolved config as the server echoes it; tests perturb copies of it.
RESOLVED_CONFIG: dict[str, Any] = {**CONTRACT_DEFAULTS, "cap_records": 10}


@dataclass(frozen=True)
class Generated:
    root: Path  # the directory holding the generated package
    output: str  # the generator's stdout + stderr
    operations: dict[str, str]  # non-streaming operationId -> first tag
    removed: set[str]  # streaming operationIds left out of the generated client


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    work = tmp_path_factory.mktemp("client")
    output = gen_client.generate(work)
    _, operations, removed = gen_client.without_streaming(gen_client.load_document())
    # the committed package, as the SDK imported it: put back afterwards, so the SDK's classes
    # (``Unset`` above all) stay the ones every later (lazy) model import sees
    committed = _package_modules()
    for name in committed:
        del sys.modules[name]
    sys.path.insert(0, str(work))
    try:
        yield Generated(work, output, operations, removed)
    finally:
        sys.path.remove(str(work))
        for name in _package_modules():
            del sys.modules[name]
        sys.modules.update(committed)


def _package_modules() -> dict[str, Any]:
    """The imported modules of the generated package (``sys.modules`` entries)."""
    return {m: mod for m, mod in sys.modules.items() if m == PACKAGE or m.startswith(PACKAGE + ".")}


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(f.relative_to(root)): f.read_bytes()
        for f in sorted(root.rglob("*"))
        if f.is_file() and "__pycache__" not in f.parts
    }


def test_the_committed_client_is_the_generated_one(generated: Generated) -> None:
    """``sdk/python/topics_client`` is exactly what ``scripts/gen-client.sh`` makes of the
    document: a spec change without regeneration (or a hand edit) fails here."""
    fresh, committed = _tree(generated.root / PACKAGE), _tree(gen_client.SDK_DIR / PACKAGE)
    missing, extra = sorted(fresh.keys() - committed.keys()), sorted(committed.keys() - fresh.keys())
    changed = sorted(name for name in fresh.keys() & committed.keys() if fresh[name] != committed[name])
    assert not (missing or extra or changed), (
        f"sdk/python/topics_client is stale — run ./scripts/gen-client.sh; missing {missing}, "
        f"extra {extra}, changed {changed}"
    )


def _module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def _models() -> Any:
    return _module("models")


class _Server:
    """An httpx transport answering every request with one canned JSON response."""

    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, json=self.body)

    def client(self) -> Any:
        client_cls = _module("client").Client
        return client_cls(base_url="http://topics.test", httpx_args={"transport": httpx.MockTransport(self)})


# ----------------------------------------------------------------------------- generation


def test_generator_emits_no_warning(generated: Generated) -> None:
    lines = [line for line in generated.output.splitlines() if line.strip()]
    unexpected = [line for line in lines if not line.startswith("Generating ")]
    assert not unexpected and not WARNING_RE.search(generated.output), (
        f"openapi-python-client printed warnings:\n{generated.output}"
    )


def test_only_the_streaming_operations_are_left_out(generated: Generated) -> None:
    # (the WebSocket upgrade is not under `paths`: the generator never sees it)
    assert generated.removed == {"work_stream", "watch_stream"}
    assert "put_topic" in generated.operations and not generated.removed & set(generated.operations)
    assert generated.operations["create_watch"] == "watch"


def test_every_operation_produced_a_module(generated: Generated) -> None:
    package = generated.root / PACKAGE
    missing = []
    for op_id, tag in sorted(generated.operations.items()):
        path = package / "api" / tag / f"{op_id}.py"
        if not path.is_file():
            missing.append(str(path.relative_to(generated.root)))
            continue
        module = _module(f"api.{tag}.{op_id}")
        for attr in ("_get_kwargs", "sync_detailed", "asyncio_detailed"):
            assert hasattr(module, attr), f"{op_id}: no {attr}"
    assert not missing, f"operations without a generated module: {missing}\n{generated.output}"


def test_one_error_model_and_no_per_status_copies(generated: Generated) -> None:
    names = sorted(p.stem for p in (generated.root / PACKAGE / "models").glob("*.py"))
    copies = [n for n in names if re.search(r"_response_(\d{3}|default)(_|$)", n)]
    assert not copies, f"per-response model copies: {copies}"
    error_models = [n for n in names if "error" in n]
    assert error_models == ["error", "error_body", "error_body_detail", "error_code"], error_models
    models = _models()
    assert {"Error", "ErrorBody", "ErrorCode", "MatchOp", "TopicType", "Discard", "Durability"} <= set(
        models.__all__
    )


# ----------------------------------------------------------------------------- requests: only what was set


def test_topic_config_with_one_field_serializes_to_that_field(generated: Generated) -> None:
    models = _models()
    assert models.TopicConfig(cap_records=10).to_dict() == {"cap_records": 10}
    assert models.TopicConfig().to_dict() == {}
    assert models.DiffRequest().to_dict() == {}
    assert models.DiffRequest(max_batch_bytes=0).to_dict() == {"max_batch_bytes": 0}
    assert models.ClaimRequest(node="w1").to_dict() == {"node": "w1"}
    assert models.NackRequest(node="w1", seqs=[3]).to_dict() == {"node": "w1", "seqs": [3]}
    append = models.AppendRequest(records=[models.RecordIn(data=None)])
    assert append.to_dict() == {"records": [{"data": None}]}
    watch = models.WatchRequest.from_dict({"topics": {"jobs": {"tail": True}}})
    assert watch.to_dict() == {"topics": {"jobs": {"tail": True}}}
    assert models.WatchTopicOptions().to_dict() == {}


def test_put_topic_sends_exactly_the_field_that_was_set(generated: Generated) -> None:
    models = _models()
    put_topic = _module("api.topics.put_topic")
    body = models.TopicConfig(cap_records=10)

    kwargs = put_topic._get_kwargs("jobs", body=body)
    assert kwargs["method"] == "put" and kwargs["url"] == "/v0/topics/jobs"
    assert kwargs["json"] == {"cap_records": 10}

    reply = {"topic": "jobs", "created": True, "config": RESOLVED_CONFIG, "performance": {}}
    server = _Server(201, reply)
    response = put_topic.sync_detailed("jobs", client=server.client(), body=body)
    (request,) = server.requests
    assert request.method == "PUT" and request.url.path == "/v0/topics/jobs"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {"cap_records": 10}
    assert response.status_code == 201
    assert isinstance(response.parsed, models.TopicPutResponse)
    assert response.parsed.config.cap_records == 10


def test_unset_query_parameters_are_not_sent(generated: Generated) -> None:
    list_topics = _module("api.topics.list_topics")
    get_topic = _module("api.topics.get_topic")
    delete_topic = _module("api.topics.delete_topic")
    append_records = _module("api.records.append_records")
    models = _models()
    assert list_topics._get_kwargs()["params"] == {}
    assert list_topics._get_kwargs(page_size=0)["params"] == {"page_size": 0}
    assert get_topic._get_kwargs("jobs")["params"] == {}
    assert delete_topic._get_kwargs("jobs")["params"] == {}
    append = append_records._get_kwargs("jobs", body=models.AppendRequest(records=[models.RecordIn(data=1)]))
    assert append["params"] == {} and append["json"] == {"records": [{"data": 1}]}
    create_watch = _module("api.watch.create_watch")
    body = models.WatchRequest.from_dict({"topics": {"jobs": {}}})
    watch = create_watch._get_kwargs(body=body)
    assert watch["url"] == "/v0/watch" and watch["params"] == {} and watch["json"] == {"topics": {"jobs": {}}}
    assert create_watch._get_kwargs(body=body, lenient=True)["params"] == {"lenient": True}


def test_request_enums_stay_closed(generated: Generated) -> None:
    models = _models()
    assert models.TopicConfig.from_dict({"discard": "reject"}).discard is models.Discard.REJECT
    for field, value in (("type", "stream"), ("discard", "bogus"), ("durability", "future-class")):
        with pytest.raises(ValueError):
            models.TopicConfig.from_dict({field: value})


# ----------------------------------------------------------------------------- responses are open


def test_responses_with_unknown_enum_values_and_fields_parse(generated: Generated) -> None:
    models = _models()
    config = dict(RESOLVED_CONFIG, type="stream", discard="future-policy", durability="future-class")
    config["added_later"] = {"x": 1}
    state = models.TopicState.from_dict(
        {
            "topic": "jobs",
            "type": "stream",
            "head_seq": 2,
            "earliest_seq": 1,
            "next_seq": 3,
            "count": 2,
            "bytes": 10,
            "config": config,
            "effective_priority": 0,
            "last_write_ts": None,
            "last_read_ts": 5,
            "performance": {"server_total_ms": 0.1, "new_timer_ms": 1.0},
            "added_later": True,
        }
    )
    assert state.type_ == "stream" and state.config.durability == "future-class"
    assert state.config.discard == "future-policy" and state["added_later"] is True
    assert state.config["added_later"] == {"x": 1}

    known = models.TopicSummary.from_dict(
        {
            "topic": "jobs",
            "type": "queue",
            "head_seq": 2,
            "earliest_seq": 1,
            "count": 2,
            "bytes": 10,
            "durable": True,
            "durability": "fsync",
            "effective_priority": 0,
        }
    )
    assert known.type_ is models.TopicType.QUEUE and known.durability is models.Durability.FSYNC
    summary = models.TopicSummary.from_dict(known.to_dict() | {"durability": "future-class", "shard": 3})
    assert summary.durability == "future-class" and summary["shard"] == 3
    assert summary.to_dict()["durability"] == "future-class"

    gap = {"gap_from": 1, "gap_to": 2, "missed_estimate": 2, "earliest_seq": 3, "head_seq": 9}
    assert models.Tombstone.from_dict(gap | {"reason": "compaction"}).reason == "compaction"
    health = models.Health.from_dict({"status": "degraded", "version": "9", "uptime_ms": 1})
    assert health.status == "degraded"
    ready = models.Ready.from_dict({"status": "warming", "wal_replay_complete": True, "topics": 0})
    assert ready.status == "warming"


def test_error_statuses_parse_into_the_one_error_model(generated: Generated) -> None:
    models = _models()
    claim_jobs = _module("api.queues.claim_jobs")
    body = models.ClaimRequest(node="w1")
    known = {"error": {"code": "not_a_queue", "message": "log", "detail": {"topic": "jobs"}}}
    response = claim_jobs.sync_detailed("jobs", client=_Server(409, known).client(), body=body)
    assert isinstance(response.parsed, models.Error)
    assert response.parsed.error.code is models.ErrorCode.NOT_A_QUEUE
    assert response.parsed.error.detail["topic"] == "jobs"

    future = {"error": {"code": "quota_exceeded", "message": "later", "hint": 1}, "performance": {}}
    response = claim_jobs.sync_detailed("jobs", client=_Server(429, future).client(), body=body)
    assert isinstance(response.parsed, models.Error)
    assert response.parsed.error.code == "quota_exceeded" and response.parsed.error["hint"] == 1

    response = claim_jobs.sync_detailed("jobs", client=_Server(503, future).client(), body=body)
    assert isinstance(response.parsed, models.Error)  # the `default` response
