from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.ack_request import AckRequest
from ...models.ack_response import AckResponse
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: AckRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/ack".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> AckResponse | Error:
    if response.status_code == 200:
        response_200 = AckResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AckResponse | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AckRequest,
) -> Response[AckResponse | Error]:
    """Complete jobs (ack is the permanent delete) (queue)

     Complete jobs: for each seq currently leased to `node` the server
    records an `acked` event and permanently deletes the job from the jobs log
    (the path of `POST /v0/topics/{topic}/delete`). Ack durability equals the topic's `durable`; on a
    durable queue the delete is fsynced before the response (`fsync_ms > 0`).
    A seq not leased to `node` (never claimed, already acked, or its lease
    expired and was re-leased) is silently skipped and listed in `skipped` —
    ack is idempotent and safe to retry. With `lease_ids`, a seq is acked only
    if its token still matches the current lease (a stale token's seq is
    skipped).

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`, missing/empty `seqs`, a non-integer
    seq) or `400 batch_too_large` when `seqs` holds more than 1000 entries (the
    fixed `TOPICS_MAX_CLAIM` bound, enforced by the server, not the schema).

    Args:
        topic (str):
        body (AckRequest): Complete jobs leased to `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AckResponse | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AckRequest,
) -> AckResponse | Error | None:
    """Complete jobs (ack is the permanent delete) (queue)

     Complete jobs: for each seq currently leased to `node` the server
    records an `acked` event and permanently deletes the job from the jobs log
    (the path of `POST /v0/topics/{topic}/delete`). Ack durability equals the topic's `durable`; on a
    durable queue the delete is fsynced before the response (`fsync_ms > 0`).
    A seq not leased to `node` (never claimed, already acked, or its lease
    expired and was re-leased) is silently skipped and listed in `skipped` —
    ack is idempotent and safe to retry. With `lease_ids`, a seq is acked only
    if its token still matches the current lease (a stale token's seq is
    skipped).

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`, missing/empty `seqs`, a non-integer
    seq) or `400 batch_too_large` when `seqs` holds more than 1000 entries (the
    fixed `TOPICS_MAX_CLAIM` bound, enforced by the server, not the schema).

    Args:
        topic (str):
        body (AckRequest): Complete jobs leased to `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AckResponse | Error
    """

    return sync_detailed(
        topic=topic,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AckRequest,
) -> Response[AckResponse | Error]:
    """Complete jobs (ack is the permanent delete) (queue)

     Complete jobs: for each seq currently leased to `node` the server
    records an `acked` event and permanently deletes the job from the jobs log
    (the path of `POST /v0/topics/{topic}/delete`). Ack durability equals the topic's `durable`; on a
    durable queue the delete is fsynced before the response (`fsync_ms > 0`).
    A seq not leased to `node` (never claimed, already acked, or its lease
    expired and was re-leased) is silently skipped and listed in `skipped` —
    ack is idempotent and safe to retry. With `lease_ids`, a seq is acked only
    if its token still matches the current lease (a stale token's seq is
    skipped).

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`, missing/empty `seqs`, a non-integer
    seq) or `400 batch_too_large` when `seqs` holds more than 1000 entries (the
    fixed `TOPICS_MAX_CLAIM` bound, enforced by the server, not the schema).

    Args:
        topic (str):
        body (AckRequest): Complete jobs leased to `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AckResponse | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AckRequest,
) -> AckResponse | Error | None:
    """Complete jobs (ack is the permanent delete) (queue)

     Complete jobs: for each seq currently leased to `node` the server
    records an `acked` event and permanently deletes the job from the jobs log
    (the path of `POST /v0/topics/{topic}/delete`). Ack durability equals the topic's `durable`; on a
    durable queue the delete is fsynced before the response (`fsync_ms > 0`).
    A seq not leased to `node` (never claimed, already acked, or its lease
    expired and was re-leased) is silently skipped and listed in `skipped` —
    ack is idempotent and safe to retry. With `lease_ids`, a seq is acked only
    if its token still matches the current lease (a stale token's seq is
    skipped).

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`, missing/empty `seqs`, a non-integer
    seq) or `400 batch_too_large` when `seqs` holds more than 1000 entries (the
    fixed `TOPICS_MAX_CLAIM` bound, enforced by the server, not the schema).

    Args:
        topic (str):
        body (AckRequest): Complete jobs leased to `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AckResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
