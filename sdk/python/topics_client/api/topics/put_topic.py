from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.topic_config import TopicConfig
from ...models.topic_put_response import TopicPutResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    body: TopicConfig | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v0/topics/{topic}".format(
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
) -> Error | TopicPutResponse:
    if response.status_code == 200:
        response_200 = TopicPutResponse.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = TopicPutResponse.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

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
) -> Response[Error | TopicPutResponse]:
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
    body: TopicConfig | Unset = UNSET,
) -> Response[Error | TopicPutResponse]:
    """Create or configure a topic (idempotent upsert)

     Topic absent → created with the given config merged over the defaults →
    `201`. Topic exists with an identical config → no-op → `200`. Topic exists
    with a different config → updated → `200`; changes apply going forward and
    never rewrite stored records (a tightened cap/ttl makes existing records
    eligible for lazy eviction/expiry). `type` is the one immutable field: a PUT
    changing it on an existing topic is `409 topic_exists_incompatible`. An empty
    body `{}` (or no body at all) creates an all-default topic. The response `config` always echoes
    the full resolved object, including the queue fields (inert on a log).

    Args:
        topic (str):
        body (TopicConfig | Unset): Topic config as sent on create/configure (PUT body, or inline
            `config` on a
            creating append). All fields optional. On create, an omitted field takes
            the default stated in its description; on an update, an omitted field keeps
            its current value (a partial `PUT` never resets a field). The schema sets no
            `default:` so a generated client sends only the fields its user set.
            Unknown fields are `400 invalid_request`. The queue fields
            (`lease_ms`, `claim_jitter_ms`, `max_deliveries`, `dead_letter`,
            `leases_durable`, `max_in_flight`) are only meaningful when `type` is `queue` (accepted
            but
            inert on a log).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicPutResponse]
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
    body: TopicConfig | Unset = UNSET,
) -> Error | TopicPutResponse | None:
    """Create or configure a topic (idempotent upsert)

     Topic absent → created with the given config merged over the defaults →
    `201`. Topic exists with an identical config → no-op → `200`. Topic exists
    with a different config → updated → `200`; changes apply going forward and
    never rewrite stored records (a tightened cap/ttl makes existing records
    eligible for lazy eviction/expiry). `type` is the one immutable field: a PUT
    changing it on an existing topic is `409 topic_exists_incompatible`. An empty
    body `{}` (or no body at all) creates an all-default topic. The response `config` always echoes
    the full resolved object, including the queue fields (inert on a log).

    Args:
        topic (str):
        body (TopicConfig | Unset): Topic config as sent on create/configure (PUT body, or inline
            `config` on a
            creating append). All fields optional. On create, an omitted field takes
            the default stated in its description; on an update, an omitted field keeps
            its current value (a partial `PUT` never resets a field). The schema sets no
            `default:` so a generated client sends only the fields its user set.
            Unknown fields are `400 invalid_request`. The queue fields
            (`lease_ms`, `claim_jitter_ms`, `max_deliveries`, `dead_letter`,
            `leases_durable`, `max_in_flight`) are only meaningful when `type` is `queue` (accepted
            but
            inert on a log).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicPutResponse
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
    body: TopicConfig | Unset = UNSET,
) -> Response[Error | TopicPutResponse]:
    """Create or configure a topic (idempotent upsert)

     Topic absent → created with the given config merged over the defaults →
    `201`. Topic exists with an identical config → no-op → `200`. Topic exists
    with a different config → updated → `200`; changes apply going forward and
    never rewrite stored records (a tightened cap/ttl makes existing records
    eligible for lazy eviction/expiry). `type` is the one immutable field: a PUT
    changing it on an existing topic is `409 topic_exists_incompatible`. An empty
    body `{}` (or no body at all) creates an all-default topic. The response `config` always echoes
    the full resolved object, including the queue fields (inert on a log).

    Args:
        topic (str):
        body (TopicConfig | Unset): Topic config as sent on create/configure (PUT body, or inline
            `config` on a
            creating append). All fields optional. On create, an omitted field takes
            the default stated in its description; on an update, an omitted field keeps
            its current value (a partial `PUT` never resets a field). The schema sets no
            `default:` so a generated client sends only the fields its user set.
            Unknown fields are `400 invalid_request`. The queue fields
            (`lease_ms`, `claim_jitter_ms`, `max_deliveries`, `dead_letter`,
            `leases_durable`, `max_in_flight`) are only meaningful when `type` is `queue` (accepted
            but
            inert on a log).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicPutResponse]
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
    body: TopicConfig | Unset = UNSET,
) -> Error | TopicPutResponse | None:
    """Create or configure a topic (idempotent upsert)

     Topic absent → created with the given config merged over the defaults →
    `201`. Topic exists with an identical config → no-op → `200`. Topic exists
    with a different config → updated → `200`; changes apply going forward and
    never rewrite stored records (a tightened cap/ttl makes existing records
    eligible for lazy eviction/expiry). `type` is the one immutable field: a PUT
    changing it on an existing topic is `409 topic_exists_incompatible`. An empty
    body `{}` (or no body at all) creates an all-default topic. The response `config` always echoes
    the full resolved object, including the queue fields (inert on a log).

    Args:
        topic (str):
        body (TopicConfig | Unset): Topic config as sent on create/configure (PUT body, or inline
            `config` on a
            creating append). All fields optional. On create, an omitted field takes
            the default stated in its description; on an update, an omitted field keeps
            its current value (a partial `PUT` never resets a field). The schema sets no
            `default:` so a generated client sends only the fields its user set.
            Unknown fields are `400 invalid_request`. The queue fields
            (`lease_ms`, `claim_jitter_ms`, `max_deliveries`, `dead_letter`,
            `leases_durable`, `max_in_flight`) are only meaningful when `type` is `queue` (accepted
            but
            inert on a log).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicPutResponse
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
