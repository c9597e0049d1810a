from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.extend_request import ExtendRequest
from ...models.extend_response import ExtendResponse
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: ExtendRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/extend".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ExtendResponse:
    if response.status_code == 200:
        response_200 = ExtendResponse.from_dict(response.json())

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
) -> Response[Error | ExtendResponse]:
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
    body: ExtendRequest,
) -> Response[Error | ExtendResponse]:
    """Push out lease deadlines (heartbeat) (queue)

     The heartbeat for long jobs: set the deadline of each lease held by
    `node` to `now + lease_ms`, recording an `extended` event. Extend sets, it
    does not add. A seq whose lease already expired (and may have been
    reclaimed), or that is not held by `node`, or whose `lease_ids` token is
    stale, is skipped — the worker should re-claim. Extending never changes the
    delivery counter.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, missing `lease_ms`, bad
    types) or `400 batch_too_large` (more than 1000 seqs). `lease_ms` is
    clamped to [100, 86400000].

    Args:
        topic (str):
        body (ExtendRequest): Push out the deadlines of leases held by `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ExtendResponse]
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
    body: ExtendRequest,
) -> Error | ExtendResponse | None:
    """Push out lease deadlines (heartbeat) (queue)

     The heartbeat for long jobs: set the deadline of each lease held by
    `node` to `now + lease_ms`, recording an `extended` event. Extend sets, it
    does not add. A seq whose lease already expired (and may have been
    reclaimed), or that is not held by `node`, or whose `lease_ids` token is
    stale, is skipped — the worker should re-claim. Extending never changes the
    delivery counter.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, missing `lease_ms`, bad
    types) or `400 batch_too_large` (more than 1000 seqs). `lease_ms` is
    clamped to [100, 86400000].

    Args:
        topic (str):
        body (ExtendRequest): Push out the deadlines of leases held by `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ExtendResponse
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
    body: ExtendRequest,
) -> Response[Error | ExtendResponse]:
    """Push out lease deadlines (heartbeat) (queue)

     The heartbeat for long jobs: set the deadline of each lease held by
    `node` to `now + lease_ms`, recording an `extended` event. Extend sets, it
    does not add. A seq whose lease already expired (and may have been
    reclaimed), or that is not held by `node`, or whose `lease_ids` token is
    stale, is skipped — the worker should re-claim. Extending never changes the
    delivery counter.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, missing `lease_ms`, bad
    types) or `400 batch_too_large` (more than 1000 seqs). `lease_ms` is
    clamped to [100, 86400000].

    Args:
        topic (str):
        body (ExtendRequest): Push out the deadlines of leases held by `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ExtendResponse]
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
    body: ExtendRequest,
) -> Error | ExtendResponse | None:
    """Push out lease deadlines (heartbeat) (queue)

     The heartbeat for long jobs: set the deadline of each lease held by
    `node` to `now + lease_ms`, recording an `extended` event. Extend sets, it
    does not add. A seq whose lease already expired (and may have been
    reclaimed), or that is not held by `node`, or whose `lease_ids` token is
    stale, is skipped — the worker should re-claim. Extending never changes the
    delivery counter.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, missing `lease_ms`, bad
    types) or `400 batch_too_large` (more than 1000 seqs). `lease_ms` is
    clamped to [100, 86400000].

    Args:
        topic (str):
        body (ExtendRequest): Push out the deadlines of leases held by `node`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ExtendResponse
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
