from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.consumer_config import ConsumerConfig
from ...models.consumer_put_response import ConsumerPutResponse
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    consumer: str,
    *,
    body: ConsumerConfig | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v0/topics/{topic}/consumers/{consumer}".format(
            topic=quote(str(topic), safe=""),
            consumer=quote(str(consumer), safe=""),
        ),
    }

    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ConsumerPutResponse | Error:
    if response.status_code == 200:
        response_200 = ConsumerPutResponse.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = ConsumerPutResponse.from_dict(response.json())

        return response_201

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
) -> Response[ConsumerPutResponse | Error]:
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
    body: ConsumerConfig | Unset = UNSET,
) -> Response[ConsumerPutResponse | Error]:
    """Create a named consumer (or reposition one with force)

     A named consumer is a cursor the server keeps for a reader (an extension:
    docs/DECISIONS.md, "Named consumers"; Kafka consumer groups, Redis
    `XREADGROUP`, NATS durable consumers): the last seq it has read. A reader
    reads after it (`POST /v0/topics/{topic}/diff` or a watch entry with
    `consumer`) and commits how far it got (`POST .../commit`), so a restarted
    reader — or another process taking over — continues where the last commit
    left off, and `lag` shows who is behind.

    The cursor starts at `from_seq`, or just before the first live record stamped
    `$ts >= from_ts`, or — with neither — before the first live record (nothing
    read yet: `earliest_seq - 1`). A `from_seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`. A PUT on an existing consumer leaves its cursor
    alone (`200` with its state) unless `force: true` repositions it the same
    way. The body is optional (none or `{}`: nothing read yet). A missing topic
    is `404 topic_not_found` (consumers are not auto-created topics). Deleting the
    topic deletes its consumers; a recreated topic starts with none. A new
    consumer beyond `TOPICS_MAX_CONSUMERS` (all topics together) is `429 throttled`
    with `detail.limit: "max_consumers"`. Answered once the change is durable in
    the write-ahead log.

    Args:
        topic (str):
        consumer (str):
        body (ConsumerConfig | Unset): Where a named consumer's cursor starts (the optional body
            of
            `PUT /v0/topics/{topic}/consumers/{consumer}`): `from_seq`, `from_ts` or — with
            neither — nothing read yet. `from_seq` and `from_ts` exclude each other.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerPutResponse | Error]
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
    body: ConsumerConfig | Unset = UNSET,
) -> ConsumerPutResponse | Error | None:
    """Create a named consumer (or reposition one with force)

     A named consumer is a cursor the server keeps for a reader (an extension:
    docs/DECISIONS.md, "Named consumers"; Kafka consumer groups, Redis
    `XREADGROUP`, NATS durable consumers): the last seq it has read. A reader
    reads after it (`POST /v0/topics/{topic}/diff` or a watch entry with
    `consumer`) and commits how far it got (`POST .../commit`), so a restarted
    reader — or another process taking over — continues where the last commit
    left off, and `lag` shows who is behind.

    The cursor starts at `from_seq`, or just before the first live record stamped
    `$ts >= from_ts`, or — with neither — before the first live record (nothing
    read yet: `earliest_seq - 1`). A `from_seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`. A PUT on an existing consumer leaves its cursor
    alone (`200` with its state) unless `force: true` repositions it the same
    way. The body is optional (none or `{}`: nothing read yet). A missing topic
    is `404 topic_not_found` (consumers are not auto-created topics). Deleting the
    topic deletes its consumers; a recreated topic starts with none. A new
    consumer beyond `TOPICS_MAX_CONSUMERS` (all topics together) is `429 throttled`
    with `detail.limit: "max_consumers"`. Answered once the change is durable in
    the write-ahead log.

    Args:
        topic (str):
        consumer (str):
        body (ConsumerConfig | Unset): Where a named consumer's cursor starts (the optional body
            of
            `PUT /v0/topics/{topic}/consumers/{consumer}`): `from_seq`, `from_ts` or — with
            neither — nothing read yet. `from_seq` and `from_ts` exclude each other.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerPutResponse | Error
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
    body: ConsumerConfig | Unset = UNSET,
) -> Response[ConsumerPutResponse | Error]:
    """Create a named consumer (or reposition one with force)

     A named consumer is a cursor the server keeps for a reader (an extension:
    docs/DECISIONS.md, "Named consumers"; Kafka consumer groups, Redis
    `XREADGROUP`, NATS durable consumers): the last seq it has read. A reader
    reads after it (`POST /v0/topics/{topic}/diff` or a watch entry with
    `consumer`) and commits how far it got (`POST .../commit`), so a restarted
    reader — or another process taking over — continues where the last commit
    left off, and `lag` shows who is behind.

    The cursor starts at `from_seq`, or just before the first live record stamped
    `$ts >= from_ts`, or — with neither — before the first live record (nothing
    read yet: `earliest_seq - 1`). A `from_seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`. A PUT on an existing consumer leaves its cursor
    alone (`200` with its state) unless `force: true` repositions it the same
    way. The body is optional (none or `{}`: nothing read yet). A missing topic
    is `404 topic_not_found` (consumers are not auto-created topics). Deleting the
    topic deletes its consumers; a recreated topic starts with none. A new
    consumer beyond `TOPICS_MAX_CONSUMERS` (all topics together) is `429 throttled`
    with `detail.limit: "max_consumers"`. Answered once the change is durable in
    the write-ahead log.

    Args:
        topic (str):
        consumer (str):
        body (ConsumerConfig | Unset): Where a named consumer's cursor starts (the optional body
            of
            `PUT /v0/topics/{topic}/consumers/{consumer}`): `from_seq`, `from_ts` or — with
            neither — nothing read yet. `from_seq` and `from_ts` exclude each other.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerPutResponse | Error]
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
    body: ConsumerConfig | Unset = UNSET,
) -> ConsumerPutResponse | Error | None:
    """Create a named consumer (or reposition one with force)

     A named consumer is a cursor the server keeps for a reader (an extension:
    docs/DECISIONS.md, "Named consumers"; Kafka consumer groups, Redis
    `XREADGROUP`, NATS durable consumers): the last seq it has read. A reader
    reads after it (`POST /v0/topics/{topic}/diff` or a watch entry with
    `consumer`) and commits how far it got (`POST .../commit`), so a restarted
    reader — or another process taking over — continues where the last commit
    left off, and `lag` shows who is behind.

    The cursor starts at `from_seq`, or just before the first live record stamped
    `$ts >= from_ts`, or — with neither — before the first live record (nothing
    read yet: `earliest_seq - 1`). A `from_seq` above the topic's `head_seq` is
    `409 cursor_beyond_head`. A PUT on an existing consumer leaves its cursor
    alone (`200` with its state) unless `force: true` repositions it the same
    way. The body is optional (none or `{}`: nothing read yet). A missing topic
    is `404 topic_not_found` (consumers are not auto-created topics). Deleting the
    topic deletes its consumers; a recreated topic starts with none. A new
    consumer beyond `TOPICS_MAX_CONSUMERS` (all topics together) is `429 throttled`
    with `detail.limit: "max_consumers"`. Answered once the change is durable in
    the write-ahead log.

    Args:
        topic (str):
        consumer (str):
        body (ConsumerConfig | Unset): Where a named consumer's cursor starts (the optional body
            of
            `PUT /v0/topics/{topic}/consumers/{consumer}`): `from_seq`, `from_ts` or — with
            neither — nothing read yet. `from_seq` and `from_ts` exclude each other.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerPutResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            consumer=consumer,
            client=client,
            body=body,
        )
    ).parsed
