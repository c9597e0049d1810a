from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/metrics",
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | str:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Error | str]:
    """Metrics (Prometheus text or JSON)

     Operational gauges, the WAL counters and the fsync-latency histogram:
    Prometheus text exposition (`text/plain; version=0.0.4`) by default, a JSON
    snapshot of the same families with `Accept: application/json`. Aggregates
    (`topics_topics`, `topics_topics_by_class{class}`, `topics_routers`,
    `topics_records_live`, `topics_bytes_live`, `topics_queue_topics`,
    `topics_queue_leases_in_flight`, `topics_sse_connections`,
    `topics_watch_sessions`, `topics_ready`, `topics_recovery_progress`,
    `topics_uptime_ms`), a bounded per-topic block (`topics_topic_head_seq`,
    `_earliest_seq`, `_records_live`, `_bytes_live`, `_queue_ready`,
    `_queue_in_flight`, labelled `{topic}`; `topics_topic_metrics_truncated` is 1
    when the block was capped), the WAL (`topics_wal_frames_total`,
    `_batches_total`, `_fsyncs_total`, `_bytes_written_total`, `_rotations_total`,
    `_queue_depth`, `_queue_depth_peak`, `_submit_full_total`, `_read_only`) and
    the histogram `topics_wal_fsync_latency_us`. Beside them (extensions, with
    the conventional twins of the names not in base units, e.g.
    `topics_wal_fsync_duration_seconds`): requests by operation and status
    (`topics_http_requests_total{operation,status}`) and their durations
    (`topics_http_request_duration_seconds{operation}`), stream lifetimes,
    WebSocket commands, records appended, jobs claimed/acked/nacked/dead-lettered,
    deliveries pushed, the elastic throttle (`topics_throttle_active`, ...), and
    the standard `process_*` and `python_*` families; docs/METRICS.md lists them
    all. `200` always, even while the WAL is replaying (the metrics describe the
    recovering process). Needs the `read` scope when keys are configured; the
    per-topic block lists only the topics in the key's prefix allowlist.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | str]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> Error | str | None:
    """Metrics (Prometheus text or JSON)

     Operational gauges, the WAL counters and the fsync-latency histogram:
    Prometheus text exposition (`text/plain; version=0.0.4`) by default, a JSON
    snapshot of the same families with `Accept: application/json`. Aggregates
    (`topics_topics`, `topics_topics_by_class{class}`, `topics_routers`,
    `topics_records_live`, `topics_bytes_live`, `topics_queue_topics`,
    `topics_queue_leases_in_flight`, `topics_sse_connections`,
    `topics_watch_sessions`, `topics_ready`, `topics_recovery_progress`,
    `topics_uptime_ms`), a bounded per-topic block (`topics_topic_head_seq`,
    `_earliest_seq`, `_records_live`, `_bytes_live`, `_queue_ready`,
    `_queue_in_flight`, labelled `{topic}`; `topics_topic_metrics_truncated` is 1
    when the block was capped), the WAL (`topics_wal_frames_total`,
    `_batches_total`, `_fsyncs_total`, `_bytes_written_total`, `_rotations_total`,
    `_queue_depth`, `_queue_depth_peak`, `_submit_full_total`, `_read_only`) and
    the histogram `topics_wal_fsync_latency_us`. Beside them (extensions, with
    the conventional twins of the names not in base units, e.g.
    `topics_wal_fsync_duration_seconds`): requests by operation and status
    (`topics_http_requests_total{operation,status}`) and their durations
    (`topics_http_request_duration_seconds{operation}`), stream lifetimes,
    WebSocket commands, records appended, jobs claimed/acked/nacked/dead-lettered,
    deliveries pushed, the elastic throttle (`topics_throttle_active`, ...), and
    the standard `process_*` and `python_*` families; docs/METRICS.md lists them
    all. `200` always, even while the WAL is replaying (the metrics describe the
    recovering process). Needs the `read` scope when keys are configured; the
    per-topic block lists only the topics in the key's prefix allowlist.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | str
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Error | str]:
    """Metrics (Prometheus text or JSON)

     Operational gauges, the WAL counters and the fsync-latency histogram:
    Prometheus text exposition (`text/plain; version=0.0.4`) by default, a JSON
    snapshot of the same families with `Accept: application/json`. Aggregates
    (`topics_topics`, `topics_topics_by_class{class}`, `topics_routers`,
    `topics_records_live`, `topics_bytes_live`, `topics_queue_topics`,
    `topics_queue_leases_in_flight`, `topics_sse_connections`,
    `topics_watch_sessions`, `topics_ready`, `topics_recovery_progress`,
    `topics_uptime_ms`), a bounded per-topic block (`topics_topic_head_seq`,
    `_earliest_seq`, `_records_live`, `_bytes_live`, `_queue_ready`,
    `_queue_in_flight`, labelled `{topic}`; `topics_topic_metrics_truncated` is 1
    when the block was capped), the WAL (`topics_wal_frames_total`,
    `_batches_total`, `_fsyncs_total`, `_bytes_written_total`, `_rotations_total`,
    `_queue_depth`, `_queue_depth_peak`, `_submit_full_total`, `_read_only`) and
    the histogram `topics_wal_fsync_latency_us`. Beside them (extensions, with
    the conventional twins of the names not in base units, e.g.
    `topics_wal_fsync_duration_seconds`): requests by operation and status
    (`topics_http_requests_total{operation,status}`) and their durations
    (`topics_http_request_duration_seconds{operation}`), stream lifetimes,
    WebSocket commands, records appended, jobs claimed/acked/nacked/dead-lettered,
    deliveries pushed, the elastic throttle (`topics_throttle_active`, ...), and
    the standard `process_*` and `python_*` families; docs/METRICS.md lists them
    all. `200` always, even while the WAL is replaying (the metrics describe the
    recovering process). Needs the `read` scope when keys are configured; the
    per-topic block lists only the topics in the key's prefix allowlist.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | str]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> Error | str | None:
    """Metrics (Prometheus text or JSON)

     Operational gauges, the WAL counters and the fsync-latency histogram:
    Prometheus text exposition (`text/plain; version=0.0.4`) by default, a JSON
    snapshot of the same families with `Accept: application/json`. Aggregates
    (`topics_topics`, `topics_topics_by_class{class}`, `topics_routers`,
    `topics_records_live`, `topics_bytes_live`, `topics_queue_topics`,
    `topics_queue_leases_in_flight`, `topics_sse_connections`,
    `topics_watch_sessions`, `topics_ready`, `topics_recovery_progress`,
    `topics_uptime_ms`), a bounded per-topic block (`topics_topic_head_seq`,
    `_earliest_seq`, `_records_live`, `_bytes_live`, `_queue_ready`,
    `_queue_in_flight`, labelled `{topic}`; `topics_topic_metrics_truncated` is 1
    when the block was capped), the WAL (`topics_wal_frames_total`,
    `_batches_total`, `_fsyncs_total`, `_bytes_written_total`, `_rotations_total`,
    `_queue_depth`, `_queue_depth_peak`, `_submit_full_total`, `_read_only`) and
    the histogram `topics_wal_fsync_latency_us`. Beside them (extensions, with
    the conventional twins of the names not in base units, e.g.
    `topics_wal_fsync_duration_seconds`): requests by operation and status
    (`topics_http_requests_total{operation,status}`) and their durations
    (`topics_http_request_duration_seconds{operation}`), stream lifetimes,
    WebSocket commands, records appended, jobs claimed/acked/nacked/dead-lettered,
    deliveries pushed, the elastic throttle (`topics_throttle_active`, ...), and
    the standard `process_*` and `python_*` families; docs/METRICS.md lists them
    all. `200` always, even while the WAL is replaying (the metrics describe the
    recovering process). Needs the `read` scope when keys are configured; the
    per-topic block lists only the topics in the key's prefix allowlist.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | str
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
