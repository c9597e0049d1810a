from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.nack_request import NackRequest
from ...models.nack_response import NackResponse
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: NackRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/nack".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | NackResponse:
    if response.status_code == 200:
        response_200 = NackResponse.from_dict(response.json())

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
) -> Response[Error | NackResponse]:
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
    body: NackRequest,
) -> Response[Error | NackResponse]:
    """Release leased jobs for immediate or delayed reclaim (queue)

     Release jobs leased to `node` back to the queue without an ack,
    recording a `released` event. The seq becomes claimable again at
    `now + delay_ms` (a voluntary early expiry); its delivery counter is
    incremented on its next claim and it stays subject to dead-lettering. A
    delayed nack counts toward neither `ready` nor `in_flight` until the delay
    elapses. Seqs not leased to `node` (or whose `lease_ids` token is stale) are
    skipped and listed in `skipped`.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, bad types) or `400
    batch_too_large` (more than 1000 seqs). `delay_ms` is clamped to
    [0, 86400000].

    Args:
        topic (str):
        body (NackRequest): Release jobs leased to `node` for immediate or delayed reclaim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NackResponse]
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
    body: NackRequest,
) -> Error | NackResponse | None:
    """Release leased jobs for immediate or delayed reclaim (queue)

     Release jobs leased to `node` back to the queue without an ack,
    recording a `released` event. The seq becomes claimable again at
    `now + delay_ms` (a voluntary early expiry); its delivery counter is
    incremented on its next claim and it stays subject to dead-lettering. A
    delayed nack counts toward neither `ready` nor `in_flight` until the delay
    elapses. Seqs not leased to `node` (or whose `lease_ids` token is stale) are
    skipped and listed in `skipped`.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, bad types) or `400
    batch_too_large` (more than 1000 seqs). `delay_ms` is clamped to
    [0, 86400000].

    Args:
        topic (str):
        body (NackRequest): Release jobs leased to `node` for immediate or delayed reclaim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NackResponse
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
    body: NackRequest,
) -> Response[Error | NackResponse]:
    """Release leased jobs for immediate or delayed reclaim (queue)

     Release jobs leased to `node` back to the queue without an ack,
    recording a `released` event. The seq becomes claimable again at
    `now + delay_ms` (a voluntary early expiry); its delivery counter is
    incremented on its next claim and it stays subject to dead-lettering. A
    delayed nack counts toward neither `ready` nor `in_flight` until the delay
    elapses. Seqs not leased to `node` (or whose `lease_ids` token is stale) are
    skipped and listed in `skipped`.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, bad types) or `400
    batch_too_large` (more than 1000 seqs). `delay_ms` is clamped to
    [0, 86400000].

    Args:
        topic (str):
        body (NackRequest): Release jobs leased to `node` for immediate or delayed reclaim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | NackResponse]
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
    body: NackRequest,
) -> Error | NackResponse | None:
    """Release leased jobs for immediate or delayed reclaim (queue)

     Release jobs leased to `node` back to the queue without an ack,
    recording a `released` event. The seq becomes claimable again at
    `now + delay_ms` (a voluntary early expiry); its delivery counter is
    incremented on its next claim and it stays subject to dead-lettering. A
    delayed nack counts toward neither `ready` nor `in_flight` until the delay
    elapses. Seqs not leased to `node` (or whose `lease_ids` token is stale) are
    skipped and listed in `skipped`.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` (missing/empty `node`/`seqs`, bad types) or `400
    batch_too_large` (more than 1000 seqs). `delay_ms` is clamped to
    [0, 86400000].

    Args:
        topic (str):
        body (NackRequest): Release jobs leased to `node` for immediate or delayed reclaim.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | NackResponse
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
