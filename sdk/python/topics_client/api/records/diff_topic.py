from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.diff_request import DiffRequest
from ...models.diff_response import DiffResponse
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    body: DiffRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/diff".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DiffResponse | Error:
    if response.status_code == 200:
        response_200 = DiffResponse.from_dict(response.json())

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
) -> Response[DiffResponse | Error]:
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
    body: DiffRequest | Unset = UNSET,
) -> Response[DiffResponse | Error]:
    """Read records after a cursor

     The core consume operation: return records with `$seq > from_seq`, bounded
    to a batch, with a continuation cursor and any tombstone. Skips TTL-expired,
    deleted, and own-node records at read time (they still advance
    `next_from_seq`). Read-only and safe to retry (POST because the operation is
    described by the JSON body). Bumps auto-priority recency. Never
    auto-creates. `limit`/`wait_ms` over their maxima are clamped, not errors.
    An absent body reads with every default (same as `{}`). With `consumer` (an
    extension) the read starts after that named consumer's committed cursor
    instead of `from_seq` (`409 no_such_consumer` if the topic has none of that
    name: the topic, the request's target, exists); the read commits nothing.

    Args:
        topic (str):
        body (DiffRequest | Unset): A read from a seq cursor, or from a time (`from_ts`). `{}`
            reads from the earliest retained record.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DiffResponse | Error]
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
    body: DiffRequest | Unset = UNSET,
) -> DiffResponse | Error | None:
    """Read records after a cursor

     The core consume operation: return records with `$seq > from_seq`, bounded
    to a batch, with a continuation cursor and any tombstone. Skips TTL-expired,
    deleted, and own-node records at read time (they still advance
    `next_from_seq`). Read-only and safe to retry (POST because the operation is
    described by the JSON body). Bumps auto-priority recency. Never
    auto-creates. `limit`/`wait_ms` over their maxima are clamped, not errors.
    An absent body reads with every default (same as `{}`). With `consumer` (an
    extension) the read starts after that named consumer's committed cursor
    instead of `from_seq` (`409 no_such_consumer` if the topic has none of that
    name: the topic, the request's target, exists); the read commits nothing.

    Args:
        topic (str):
        body (DiffRequest | Unset): A read from a seq cursor, or from a time (`from_ts`). `{}`
            reads from the earliest retained record.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DiffResponse | Error
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
    body: DiffRequest | Unset = UNSET,
) -> Response[DiffResponse | Error]:
    """Read records after a cursor

     The core consume operation: return records with `$seq > from_seq`, bounded
    to a batch, with a continuation cursor and any tombstone. Skips TTL-expired,
    deleted, and own-node records at read time (they still advance
    `next_from_seq`). Read-only and safe to retry (POST because the operation is
    described by the JSON body). Bumps auto-priority recency. Never
    auto-creates. `limit`/`wait_ms` over their maxima are clamped, not errors.
    An absent body reads with every default (same as `{}`). With `consumer` (an
    extension) the read starts after that named consumer's committed cursor
    instead of `from_seq` (`409 no_such_consumer` if the topic has none of that
    name: the topic, the request's target, exists); the read commits nothing.

    Args:
        topic (str):
        body (DiffRequest | Unset): A read from a seq cursor, or from a time (`from_ts`). `{}`
            reads from the earliest retained record.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DiffResponse | Error]
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
    body: DiffRequest | Unset = UNSET,
) -> DiffResponse | Error | None:
    """Read records after a cursor

     The core consume operation: return records with `$seq > from_seq`, bounded
    to a batch, with a continuation cursor and any tombstone. Skips TTL-expired,
    deleted, and own-node records at read time (they still advance
    `next_from_seq`). Read-only and safe to retry (POST because the operation is
    described by the JSON body). Bumps auto-priority recency. Never
    auto-creates. `limit`/`wait_ms` over their maxima are clamped, not errors.
    An absent body reads with every default (same as `{}`). With `consumer` (an
    extension) the read starts after that named consumer's committed cursor
    instead of `from_seq` (`409 no_such_consumer` if the topic has none of that
    name: the topic, the request's target, exists); the read commits nothing.

    Args:
        topic (str):
        body (DiffRequest | Unset): A read from a seq cursor, or from a time (`from_ts`). `{}`
            reads from the earliest retained record.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DiffResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
