from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.topic_delete_response import TopicDeleteResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    if_empty: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["if_empty"] = if_empty

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v0/topics/{topic}".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | TopicDeleteResponse:
    if response.status_code == 200:
        response_200 = TopicDeleteResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | TopicDeleteResponse]:
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
    if_empty: bool | Unset = UNSET,
) -> Response[Error | TopicDeleteResponse]:
    """Delete a topic

     Permanently remove a topic and all its records, dedupe state, the per-topic
    tag index, and routers referencing it. Idempotent and irreversible. Deleting
    an absent topic returns `200` with `deleted: false` and an empty
    `routers_removed`. A later lazy-create makes a new, empty topic (seq
    restarts); stale consumers detect this via the `recreated` tombstone. The
    topic's named consumers (an extension) go with it: a recreated topic starts
    with none.

    Args:
        topic (str):
        if_empty (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicDeleteResponse]
    """

    kwargs = _get_kwargs(
        topic=topic,
        if_empty=if_empty,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    if_empty: bool | Unset = UNSET,
) -> Error | TopicDeleteResponse | None:
    """Delete a topic

     Permanently remove a topic and all its records, dedupe state, the per-topic
    tag index, and routers referencing it. Idempotent and irreversible. Deleting
    an absent topic returns `200` with `deleted: false` and an empty
    `routers_removed`. A later lazy-create makes a new, empty topic (seq
    restarts); stale consumers detect this via the `recreated` tombstone. The
    topic's named consumers (an extension) go with it: a recreated topic starts
    with none.

    Args:
        topic (str):
        if_empty (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicDeleteResponse
    """

    return sync_detailed(
        topic=topic,
        client=client,
        if_empty=if_empty,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    if_empty: bool | Unset = UNSET,
) -> Response[Error | TopicDeleteResponse]:
    """Delete a topic

     Permanently remove a topic and all its records, dedupe state, the per-topic
    tag index, and routers referencing it. Idempotent and irreversible. Deleting
    an absent topic returns `200` with `deleted: false` and an empty
    `routers_removed`. A later lazy-create makes a new, empty topic (seq
    restarts); stale consumers detect this via the `recreated` tombstone. The
    topic's named consumers (an extension) go with it: a recreated topic starts
    with none.

    Args:
        topic (str):
        if_empty (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicDeleteResponse]
    """

    kwargs = _get_kwargs(
        topic=topic,
        if_empty=if_empty,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    if_empty: bool | Unset = UNSET,
) -> Error | TopicDeleteResponse | None:
    """Delete a topic

     Permanently remove a topic and all its records, dedupe state, the per-topic
    tag index, and routers referencing it. Idempotent and irreversible. Deleting
    an absent topic returns `200` with `deleted: false` and an empty
    `routers_removed`. A later lazy-create makes a new, empty topic (seq
    restarts); stale consumers detect this via the `recreated` tombstone. The
    topic's named consumers (an extension) go with it: a recreated topic starts
    with none.

    Args:
        topic (str):
        if_empty (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicDeleteResponse
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            if_empty=if_empty,
        )
    ).parsed
