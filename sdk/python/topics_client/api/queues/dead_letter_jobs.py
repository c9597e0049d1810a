from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.dead_letter_request import DeadLetterRequest
from ...models.dead_letter_response import DeadLetterResponse
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: DeadLetterRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/dead_letter".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DeadLetterResponse | Error:
    if response.status_code == 200:
        response_200 = DeadLetterResponse.from_dict(response.json())

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
) -> Response[DeadLetterResponse | Error]:
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
    body: DeadLetterRequest,
) -> Response[DeadLetterResponse | Error]:
    """Move jobs to the dead-letter topic now (queue)

     A permanent failure (an extension: docs/DECISIONS.md, "Explicit dead-letter
    moves"): each seq currently leased to `node` (fenced by `lease_ids` as on
    ack) is moved to the queue's `dead_letter` topic now, whatever its delivery
    count — appended there with the provenance meta (`$dead_letter_from`, `$deliveries`, …) plus
    `$dead_letter_reason` (when `reason` is given), deleted from the queue, and
    counted in `dead_lettered`. All of a call's jobs are appended in one write:
    if the dead-letter topic refuses it (`422 topic_full`, a `404` when it does
    not exist and may not be created, `503 not_ready`), nothing moved and every
    lease stands. A seq not leased to `node` is skipped, as on ack.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` / `batch_too_large` as on ack, and `409 no_dead_letter`
    when the queue has no `dead_letter` topic.

    Args:
        topic (str):
        body (DeadLetterRequest): Move jobs leased to `node` to the queue's dead-letter topic now.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeadLetterResponse | Error]
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
    body: DeadLetterRequest,
) -> DeadLetterResponse | Error | None:
    """Move jobs to the dead-letter topic now (queue)

     A permanent failure (an extension: docs/DECISIONS.md, "Explicit dead-letter
    moves"): each seq currently leased to `node` (fenced by `lease_ids` as on
    ack) is moved to the queue's `dead_letter` topic now, whatever its delivery
    count — appended there with the provenance meta (`$dead_letter_from`, `$deliveries`, …) plus
    `$dead_letter_reason` (when `reason` is given), deleted from the queue, and
    counted in `dead_lettered`. All of a call's jobs are appended in one write:
    if the dead-letter topic refuses it (`422 topic_full`, a `404` when it does
    not exist and may not be created, `503 not_ready`), nothing moved and every
    lease stands. A seq not leased to `node` is skipped, as on ack.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` / `batch_too_large` as on ack, and `409 no_dead_letter`
    when the queue has no `dead_letter` topic.

    Args:
        topic (str):
        body (DeadLetterRequest): Move jobs leased to `node` to the queue's dead-letter topic now.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeadLetterResponse | Error
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
    body: DeadLetterRequest,
) -> Response[DeadLetterResponse | Error]:
    """Move jobs to the dead-letter topic now (queue)

     A permanent failure (an extension: docs/DECISIONS.md, "Explicit dead-letter
    moves"): each seq currently leased to `node` (fenced by `lease_ids` as on
    ack) is moved to the queue's `dead_letter` topic now, whatever its delivery
    count — appended there with the provenance meta (`$dead_letter_from`, `$deliveries`, …) plus
    `$dead_letter_reason` (when `reason` is given), deleted from the queue, and
    counted in `dead_lettered`. All of a call's jobs are appended in one write:
    if the dead-letter topic refuses it (`422 topic_full`, a `404` when it does
    not exist and may not be created, `503 not_ready`), nothing moved and every
    lease stands. A seq not leased to `node` is skipped, as on ack.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` / `batch_too_large` as on ack, and `409 no_dead_letter`
    when the queue has no `dead_letter` topic.

    Args:
        topic (str):
        body (DeadLetterRequest): Move jobs leased to `node` to the queue's dead-letter topic now.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeadLetterResponse | Error]
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
    body: DeadLetterRequest,
) -> DeadLetterResponse | Error | None:
    """Move jobs to the dead-letter topic now (queue)

     A permanent failure (an extension: docs/DECISIONS.md, "Explicit dead-letter
    moves"): each seq currently leased to `node` (fenced by `lease_ids` as on
    ack) is moved to the queue's `dead_letter` topic now, whatever its delivery
    count — appended there with the provenance meta (`$dead_letter_from`, `$deliveries`, …) plus
    `$dead_letter_reason` (when `reason` is given), deleted from the queue, and
    counted in `dead_lettered`. All of a call's jobs are appended in one write:
    if the dead-letter topic refuses it (`422 topic_full`, a `404` when it does
    not exist and may not be created, `503 not_ready`), nothing moved and every
    lease stands. A seq not leased to `node` is skipped, as on ack.

    Order of checks: the topic must exist (`404 topic_not_found`; never
    auto-creates) and be a queue (`409 not_a_queue` on a log topic) — both are
    answered before the endpoint's own fields are validated. Then `400
    invalid_request` / `batch_too_large` as on ack, and `409 no_dead_letter`
    when the queue has no `dead_letter` topic.

    Args:
        topic (str):
        body (DeadLetterRequest): Move jobs leased to `node` to the queue's dead-letter topic now.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeadLetterResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
