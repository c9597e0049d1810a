from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.claim_request import ClaimRequest
from ...models.claim_response import ClaimResponse
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: ClaimRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/claim".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ClaimResponse | Error:
    if response.status_code == 200:
        response_200 = ClaimResponse.from_dict(response.json())

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

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ClaimResponse | Error]:
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
    body: ClaimRequest,
) -> Response[ClaimResponse | Error]:
    """Lease jobs to a worker (queue)

     Lease up to `max` claimable jobs to the worker `node`. A job is
    claimable iff it is still in the jobs log (not acked) and has no active
    lease (never leased, or its lease expired — the visibility timeout).
    Each returned job records a `claimed` event in the leases log and increments
    that job's delivery counter; a job about to exceed the topic's
    `max_deliveries` is dead-lettered instead of delivered. Reclaimed
    (expired-lease / elapsed-nack-delay) seqs are served before fresh ones.
    The response may hold fewer jobs than `max`, or none: `count < max` is the
    reliable "queue (near-)empty" signal, never an error. With the topic's
    `claim_jitter_ms > 0` the claim waits up to that window and the jobs are
    divided evenly across every claimer (and `/work` stream) of the cohort.

    Order of checks: the topic must exist (`404 topic_not_found`; queue
    endpoints never auto-create) and be a queue (`409 not_a_queue` on a log
    topic) — both are answered before the endpoint's own fields are validated,
    so a bad body against a log topic is still `409`. Then `400
    invalid_request` for a missing/empty `node` or a bad `max`/`lease_ms`.
    `max` is clamped to 1000 (`0` means the default 1); `lease_ms` is clamped to
    [100, 86400000] — out-of-range values are clamped, not rejected.

    Args:
        topic (str):
        body (ClaimRequest): A claim of up to `max` jobs for one worker node.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClaimResponse | Error]
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
    body: ClaimRequest,
) -> ClaimResponse | Error | None:
    """Lease jobs to a worker (queue)

     Lease up to `max` claimable jobs to the worker `node`. A job is
    claimable iff it is still in the jobs log (not acked) and has no active
    lease (never leased, or its lease expired — the visibility timeout).
    Each returned job records a `claimed` event in the leases log and increments
    that job's delivery counter; a job about to exceed the topic's
    `max_deliveries` is dead-lettered instead of delivered. Reclaimed
    (expired-lease / elapsed-nack-delay) seqs are served before fresh ones.
    The response may hold fewer jobs than `max`, or none: `count < max` is the
    reliable "queue (near-)empty" signal, never an error. With the topic's
    `claim_jitter_ms > 0` the claim waits up to that window and the jobs are
    divided evenly across every claimer (and `/work` stream) of the cohort.

    Order of checks: the topic must exist (`404 topic_not_found`; queue
    endpoints never auto-create) and be a queue (`409 not_a_queue` on a log
    topic) — both are answered before the endpoint's own fields are validated,
    so a bad body against a log topic is still `409`. Then `400
    invalid_request` for a missing/empty `node` or a bad `max`/`lease_ms`.
    `max` is clamped to 1000 (`0` means the default 1); `lease_ms` is clamped to
    [100, 86400000] — out-of-range values are clamped, not rejected.

    Args:
        topic (str):
        body (ClaimRequest): A claim of up to `max` jobs for one worker node.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClaimResponse | Error
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
    body: ClaimRequest,
) -> Response[ClaimResponse | Error]:
    """Lease jobs to a worker (queue)

     Lease up to `max` claimable jobs to the worker `node`. A job is
    claimable iff it is still in the jobs log (not acked) and has no active
    lease (never leased, or its lease expired — the visibility timeout).
    Each returned job records a `claimed` event in the leases log and increments
    that job's delivery counter; a job about to exceed the topic's
    `max_deliveries` is dead-lettered instead of delivered. Reclaimed
    (expired-lease / elapsed-nack-delay) seqs are served before fresh ones.
    The response may hold fewer jobs than `max`, or none: `count < max` is the
    reliable "queue (near-)empty" signal, never an error. With the topic's
    `claim_jitter_ms > 0` the claim waits up to that window and the jobs are
    divided evenly across every claimer (and `/work` stream) of the cohort.

    Order of checks: the topic must exist (`404 topic_not_found`; queue
    endpoints never auto-create) and be a queue (`409 not_a_queue` on a log
    topic) — both are answered before the endpoint's own fields are validated,
    so a bad body against a log topic is still `409`. Then `400
    invalid_request` for a missing/empty `node` or a bad `max`/`lease_ms`.
    `max` is clamped to 1000 (`0` means the default 1); `lease_ms` is clamped to
    [100, 86400000] — out-of-range values are clamped, not rejected.

    Args:
        topic (str):
        body (ClaimRequest): A claim of up to `max` jobs for one worker node.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ClaimResponse | Error]
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
    body: ClaimRequest,
) -> ClaimResponse | Error | None:
    """Lease jobs to a worker (queue)

     Lease up to `max` claimable jobs to the worker `node`. A job is
    claimable iff it is still in the jobs log (not acked) and has no active
    lease (never leased, or its lease expired — the visibility timeout).
    Each returned job records a `claimed` event in the leases log and increments
    that job's delivery counter; a job about to exceed the topic's
    `max_deliveries` is dead-lettered instead of delivered. Reclaimed
    (expired-lease / elapsed-nack-delay) seqs are served before fresh ones.
    The response may hold fewer jobs than `max`, or none: `count < max` is the
    reliable "queue (near-)empty" signal, never an error. With the topic's
    `claim_jitter_ms > 0` the claim waits up to that window and the jobs are
    divided evenly across every claimer (and `/work` stream) of the cohort.

    Order of checks: the topic must exist (`404 topic_not_found`; queue
    endpoints never auto-create) and be a queue (`409 not_a_queue` on a log
    topic) — both are answered before the endpoint's own fields are validated,
    so a bad body against a log topic is still `409`. Then `400
    invalid_request` for a missing/empty `node` or a bad `max`/`lease_ms`.
    `max` is clamped to 1000 (`0` means the default 1); `lease_ms` is clamped to
    [100, 86400000] — out-of-range values are clamped, not rejected.

    Args:
        topic (str):
        body (ClaimRequest): A claim of up to `max` jobs for one worker node.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ClaimResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
