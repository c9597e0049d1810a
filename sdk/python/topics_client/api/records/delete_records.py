from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.delete_records_request import DeleteRecordsRequest
from ...models.delete_records_response import DeleteRecordsResponse
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: DeleteRecordsRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/delete".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DeleteRecordsResponse | Error:
    if response.status_code == 200:
        response_200 = DeleteRecordsResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

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
) -> Response[DeleteRecordsResponse | Error]:
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
    body: DeleteRecordsRequest,
) -> Response[DeleteRecordsResponse | Error]:
    """Permanently delete records by seq range and/or tag match

     At least one of `before_seq` / `match` is required (else
    `400 invalid_request`); supply both to AND them. `before_seq` deletes every
    record with `$seq < before_seq`; `match` deletes every existing record whose
    tag matches, bounded by the head at call time (point-in-time, not a standing
    filter). Records with no tag are never matched. Deletion is permanent,
    effective immediately for every reader, and silent (never a tombstone); it
    advances `earliest_seq`.

    Args:
        topic (str):
        body (DeleteRecordsRequest): At least one of `before_seq` / `match` is required
            (`minProperties`; `400 invalid_request` otherwise); both are ANDed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeleteRecordsResponse | Error]
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
    body: DeleteRecordsRequest,
) -> DeleteRecordsResponse | Error | None:
    """Permanently delete records by seq range and/or tag match

     At least one of `before_seq` / `match` is required (else
    `400 invalid_request`); supply both to AND them. `before_seq` deletes every
    record with `$seq < before_seq`; `match` deletes every existing record whose
    tag matches, bounded by the head at call time (point-in-time, not a standing
    filter). Records with no tag are never matched. Deletion is permanent,
    effective immediately for every reader, and silent (never a tombstone); it
    advances `earliest_seq`.

    Args:
        topic (str):
        body (DeleteRecordsRequest): At least one of `before_seq` / `match` is required
            (`minProperties`; `400 invalid_request` otherwise); both are ANDed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeleteRecordsResponse | Error
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
    body: DeleteRecordsRequest,
) -> Response[DeleteRecordsResponse | Error]:
    """Permanently delete records by seq range and/or tag match

     At least one of `before_seq` / `match` is required (else
    `400 invalid_request`); supply both to AND them. `before_seq` deletes every
    record with `$seq < before_seq`; `match` deletes every existing record whose
    tag matches, bounded by the head at call time (point-in-time, not a standing
    filter). Records with no tag are never matched. Deletion is permanent,
    effective immediately for every reader, and silent (never a tombstone); it
    advances `earliest_seq`.

    Args:
        topic (str):
        body (DeleteRecordsRequest): At least one of `before_seq` / `match` is required
            (`minProperties`; `400 invalid_request` otherwise); both are ANDed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DeleteRecordsResponse | Error]
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
    body: DeleteRecordsRequest,
) -> DeleteRecordsResponse | Error | None:
    """Permanently delete records by seq range and/or tag match

     At least one of `before_seq` / `match` is required (else
    `400 invalid_request`); supply both to AND them. `before_seq` deletes every
    record with `$seq < before_seq`; `match` deletes every existing record whose
    tag matches, bounded by the head at call time (point-in-time, not a standing
    filter). Records with no tag are never matched. Deletion is permanent,
    effective immediately for every reader, and silent (never a tombstone); it
    advances `earliest_seq`.

    Args:
        topic (str):
        body (DeleteRecordsRequest): At least one of `before_seq` / `match` is required
            (`minProperties`; `400 invalid_request` otherwise); both are ANDed.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DeleteRecordsResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
