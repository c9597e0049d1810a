from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.watch_request import WatchRequest
from ...models.watch_session import WatchSession
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: WatchRequest,
    lenient: bool | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    params: dict[str, Any] = {}

    params["lenient"] = lenient

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/watch",
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | WatchSession:
    if response.status_code == 200:
        response_200 = WatchSession.from_dict(response.json())

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
) -> Response[Error | WatchSession]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: WatchRequest,
    lenient: bool | Unset = UNSET,
) -> Response[Error | WatchSession]:
    """Create a multiplexed watch session

     Create a watch session over many topics. The POST carries the whole
    subscription — per-topic start positions and the stream options — and is
    answered (`400`/`404`/...) before any stream is open, while the client can
    still read the error body. The stream itself is the EventSource-compatible
    `GET` of the returned `stream_url` (`GET /v0/watch/{wid}`, operation
    `watch_stream`).

    The session holds the subscription and the last-delivered cursor per topic
    (so a reconnecting GET resumes exactly). It is reclaimed after
    `session_ttl_ms` (300000) without an open stream: the idle-session GC runs
    on every `POST /v0/watch` and every stream open and removes each session
    with no live stream whose last access is older than its TTL (a session
    with an open stream is never reclaimed). A reclaimed wid answers
    `404 not_found`; re-create the session at a known position by sending the
    stream's last `id:` as `cursor`.

    Auth: the `read` scope, and every topic named in `topics` must be within
    the key's prefix allowlist (`403 forbidden`). The returned `wid` is an
    unguessable random capability (≥128 bits, base64url) bound to the
    creating key and its scope: with auth enabled the stream `GET` must
    present that same key (a leaked wid alone is not a credential); in dev
    mode (no keys) the wid alone opens the stream.

    The response echoes each topic's resolved start (`from_seq`) with its
    `head_seq` and `earliest_seq`, so the client can compute lag and see,
    before streaming, whether a cursor has already fallen off the start (the
    stream then opens with a `from_seq_too_old` tombstone for that topic).
    Watching never creates a topic.

    Errors: `400 invalid_request` (malformed body or `topics`, an invalid topic
    name, more than `TOPICS_MAX_WATCH_TOPICS` (default 256) topics, a
    malformed `cursor`); `404 topic_not_found` (an unknown topic, unless
    `?lenient=true`); `409 no_such_consumer` (an entry's `consumer` that the
    topic does not have); `429 throttled` with `error.detail.limit:
    "max_watch_sessions"` once `TOPICS_MAX_WATCH_SESSIONS` (default 10000)
    sessions exist, or under CPU pressure.

    Args:
        lenient (bool | Unset):
        body (WatchRequest): A watch subscription: the topics with their start positions, and the
            stream
            options (applied to every watched topic). All fields but `topics` are
            optional; an omitted option takes the default stated in its description.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | WatchSession]
    """

    kwargs = _get_kwargs(
        body=body,
        lenient=lenient,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: WatchRequest,
    lenient: bool | Unset = UNSET,
) -> Error | WatchSession | None:
    """Create a multiplexed watch session

     Create a watch session over many topics. The POST carries the whole
    subscription — per-topic start positions and the stream options — and is
    answered (`400`/`404`/...) before any stream is open, while the client can
    still read the error body. The stream itself is the EventSource-compatible
    `GET` of the returned `stream_url` (`GET /v0/watch/{wid}`, operation
    `watch_stream`).

    The session holds the subscription and the last-delivered cursor per topic
    (so a reconnecting GET resumes exactly). It is reclaimed after
    `session_ttl_ms` (300000) without an open stream: the idle-session GC runs
    on every `POST /v0/watch` and every stream open and removes each session
    with no live stream whose last access is older than its TTL (a session
    with an open stream is never reclaimed). A reclaimed wid answers
    `404 not_found`; re-create the session at a known position by sending the
    stream's last `id:` as `cursor`.

    Auth: the `read` scope, and every topic named in `topics` must be within
    the key's prefix allowlist (`403 forbidden`). The returned `wid` is an
    unguessable random capability (≥128 bits, base64url) bound to the
    creating key and its scope: with auth enabled the stream `GET` must
    present that same key (a leaked wid alone is not a credential); in dev
    mode (no keys) the wid alone opens the stream.

    The response echoes each topic's resolved start (`from_seq`) with its
    `head_seq` and `earliest_seq`, so the client can compute lag and see,
    before streaming, whether a cursor has already fallen off the start (the
    stream then opens with a `from_seq_too_old` tombstone for that topic).
    Watching never creates a topic.

    Errors: `400 invalid_request` (malformed body or `topics`, an invalid topic
    name, more than `TOPICS_MAX_WATCH_TOPICS` (default 256) topics, a
    malformed `cursor`); `404 topic_not_found` (an unknown topic, unless
    `?lenient=true`); `409 no_such_consumer` (an entry's `consumer` that the
    topic does not have); `429 throttled` with `error.detail.limit:
    "max_watch_sessions"` once `TOPICS_MAX_WATCH_SESSIONS` (default 10000)
    sessions exist, or under CPU pressure.

    Args:
        lenient (bool | Unset):
        body (WatchRequest): A watch subscription: the topics with their start positions, and the
            stream
            options (applied to every watched topic). All fields but `topics` are
            optional; an omitted option takes the default stated in its description.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | WatchSession
    """

    return sync_detailed(
        client=client,
        body=body,
        lenient=lenient,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: WatchRequest,
    lenient: bool | Unset = UNSET,
) -> Response[Error | WatchSession]:
    """Create a multiplexed watch session

     Create a watch session over many topics. The POST carries the whole
    subscription — per-topic start positions and the stream options — and is
    answered (`400`/`404`/...) before any stream is open, while the client can
    still read the error body. The stream itself is the EventSource-compatible
    `GET` of the returned `stream_url` (`GET /v0/watch/{wid}`, operation
    `watch_stream`).

    The session holds the subscription and the last-delivered cursor per topic
    (so a reconnecting GET resumes exactly). It is reclaimed after
    `session_ttl_ms` (300000) without an open stream: the idle-session GC runs
    on every `POST /v0/watch` and every stream open and removes each session
    with no live stream whose last access is older than its TTL (a session
    with an open stream is never reclaimed). A reclaimed wid answers
    `404 not_found`; re-create the session at a known position by sending the
    stream's last `id:` as `cursor`.

    Auth: the `read` scope, and every topic named in `topics` must be within
    the key's prefix allowlist (`403 forbidden`). The returned `wid` is an
    unguessable random capability (≥128 bits, base64url) bound to the
    creating key and its scope: with auth enabled the stream `GET` must
    present that same key (a leaked wid alone is not a credential); in dev
    mode (no keys) the wid alone opens the stream.

    The response echoes each topic's resolved start (`from_seq`) with its
    `head_seq` and `earliest_seq`, so the client can compute lag and see,
    before streaming, whether a cursor has already fallen off the start (the
    stream then opens with a `from_seq_too_old` tombstone for that topic).
    Watching never creates a topic.

    Errors: `400 invalid_request` (malformed body or `topics`, an invalid topic
    name, more than `TOPICS_MAX_WATCH_TOPICS` (default 256) topics, a
    malformed `cursor`); `404 topic_not_found` (an unknown topic, unless
    `?lenient=true`); `409 no_such_consumer` (an entry's `consumer` that the
    topic does not have); `429 throttled` with `error.detail.limit:
    "max_watch_sessions"` once `TOPICS_MAX_WATCH_SESSIONS` (default 10000)
    sessions exist, or under CPU pressure.

    Args:
        lenient (bool | Unset):
        body (WatchRequest): A watch subscription: the topics with their start positions, and the
            stream
            options (applied to every watched topic). All fields but `topics` are
            optional; an omitted option takes the default stated in its description.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | WatchSession]
    """

    kwargs = _get_kwargs(
        body=body,
        lenient=lenient,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: WatchRequest,
    lenient: bool | Unset = UNSET,
) -> Error | WatchSession | None:
    """Create a multiplexed watch session

     Create a watch session over many topics. The POST carries the whole
    subscription — per-topic start positions and the stream options — and is
    answered (`400`/`404`/...) before any stream is open, while the client can
    still read the error body. The stream itself is the EventSource-compatible
    `GET` of the returned `stream_url` (`GET /v0/watch/{wid}`, operation
    `watch_stream`).

    The session holds the subscription and the last-delivered cursor per topic
    (so a reconnecting GET resumes exactly). It is reclaimed after
    `session_ttl_ms` (300000) without an open stream: the idle-session GC runs
    on every `POST /v0/watch` and every stream open and removes each session
    with no live stream whose last access is older than its TTL (a session
    with an open stream is never reclaimed). A reclaimed wid answers
    `404 not_found`; re-create the session at a known position by sending the
    stream's last `id:` as `cursor`.

    Auth: the `read` scope, and every topic named in `topics` must be within
    the key's prefix allowlist (`403 forbidden`). The returned `wid` is an
    unguessable random capability (≥128 bits, base64url) bound to the
    creating key and its scope: with auth enabled the stream `GET` must
    present that same key (a leaked wid alone is not a credential); in dev
    mode (no keys) the wid alone opens the stream.

    The response echoes each topic's resolved start (`from_seq`) with its
    `head_seq` and `earliest_seq`, so the client can compute lag and see,
    before streaming, whether a cursor has already fallen off the start (the
    stream then opens with a `from_seq_too_old` tombstone for that topic).
    Watching never creates a topic.

    Errors: `400 invalid_request` (malformed body or `topics`, an invalid topic
    name, more than `TOPICS_MAX_WATCH_TOPICS` (default 256) topics, a
    malformed `cursor`); `404 topic_not_found` (an unknown topic, unless
    `?lenient=true`); `409 no_such_consumer` (an entry's `consumer` that the
    topic does not have); `429 throttled` with `error.detail.limit:
    "max_watch_sessions"` once `TOPICS_MAX_WATCH_SESSIONS` (default 10000)
    sessions exist, or under CPU pressure.

    Args:
        lenient (bool | Unset):
        body (WatchRequest): A watch subscription: the topics with their start positions, and the
            stream
            options (applied to every watched topic). All fields but `topics` are
            optional; an omitted option takes the default stated in its description.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | WatchSession
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            lenient=lenient,
        )
    ).parsed
