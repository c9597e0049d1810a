from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.commit_request import CommitRequest
from ...models.consumer_state import ConsumerState
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    consumer: str,
    *,
    body: CommitRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}/consumers/{consumer}/commit".format(
            topic=quote(str(topic), safe=""),
            consumer=quote(str(consumer), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ConsumerState | Error:
    if response.status_code == 200:
        response_200 = ConsumerState.from_dict(response.json())

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
) -> Response[ConsumerState | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    topic: str,
    consumer: str,
    *,
    client: AuthenticatedClient,
    body: CommitRequest,
) -> Response[ConsumerState | Error]:
    """Commit a named consumer's cursor

     Moves the consumer's cursor to `seq` — the last seq it has handled, typically
    a diff's `next_from_seq` (records the reader skipped still advance it).
    Monotonic: a `seq` below the committed cursor is `409 cursor_behind` unless
    `force: true` (a rewind); committing the cursor it holds renews
    `committed_at_ms`. A `seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`, with or without `force` (a `409`, not a `400`:
    the body is schema-valid, only the topic's state refuses it — docs/DECISIONS.md,
    "Named consumers"). Answered once the commit is durable in the write-ahead
    log (the group commit), so an acknowledged commit survives a crash and a
    committed cursor never moves back after one.

    Args:
        topic (str):
        consumer (str):
        body (CommitRequest): A named consumer's commit.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerState | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        consumer=consumer,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    consumer: str,
    *,
    client: AuthenticatedClient,
    body: CommitRequest,
) -> ConsumerState | Error | None:
    """Commit a named consumer's cursor

     Moves the consumer's cursor to `seq` — the last seq it has handled, typically
    a diff's `next_from_seq` (records the reader skipped still advance it).
    Monotonic: a `seq` below the committed cursor is `409 cursor_behind` unless
    `force: true` (a rewind); committing the cursor it holds renews
    `committed_at_ms`. A `seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`, with or without `force` (a `409`, not a `400`:
    the body is schema-valid, only the topic's state refuses it — docs/DECISIONS.md,
    "Named consumers"). Answered once the commit is durable in the write-ahead
    log (the group commit), so an acknowledged commit survives a crash and a
    committed cursor never moves back after one.

    Args:
        topic (str):
        consumer (str):
        body (CommitRequest): A named consumer's commit.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerState | Error
    """

    return sync_detailed(
        topic=topic,
        consumer=consumer,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    topic: str,
    consumer: str,
    *,
    client: AuthenticatedClient,
    body: CommitRequest,
) -> Response[ConsumerState | Error]:
    """Commit a named consumer's cursor

     Moves the consumer's cursor to `seq` — the last seq it has handled, typically
    a diff's `next_from_seq` (records the reader skipped still advance it).
    Monotonic: a `seq` below the committed cursor is `409 cursor_behind` unless
    `force: true` (a rewind); committing the cursor it holds renews
    `committed_at_ms`. A `seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`, with or without `force` (a `409`, not a `400`:
    the body is schema-valid, only the topic's state refuses it — docs/DECISIONS.md,
    "Named consumers"). Answered once the commit is durable in the write-ahead
    log (the group commit), so an acknowledged commit survives a crash and a
    committed cursor never moves back after one.

    Args:
        topic (str):
        consumer (str):
        body (CommitRequest): A named consumer's commit.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerState | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        consumer=consumer,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    consumer: str,
    *,
    client: AuthenticatedClient,
    body: CommitRequest,
) -> ConsumerState | Error | None:
    """Commit a named consumer's cursor

     Moves the consumer's cursor to `seq` — the last seq it has handled, typically
    a diff's `next_from_seq` (records the reader skipped still advance it).
    Monotonic: a `seq` below the committed cursor is `409 cursor_behind` unless
    `force: true` (a rewind); committing the cursor it holds renews
    `committed_at_ms`. A `seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`, with or without `force` (a `409`, not a `400`:
    the body is schema-valid, only the topic's state refuses it — docs/DECISIONS.md,
    "Named consumers"). Answered once the commit is durable in the write-ahead
    log (the group commit), so an acknowledged commit survives a crash and a
    committed cursor never moves back after one.

    Args:
        topic (str):
        consumer (str):
        body (CommitRequest): A named consumer's commit.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerState | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            consumer=consumer,
            client=client,
            body=body,
        )
    ).parsed
