from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.topic_state import TopicState
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    touch: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["touch"] = touch

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/topics/{topic}".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | TopicState:
    if response.status_code == 200:
        response_200 = TopicState.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | TopicState]:
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
    touch: bool | Unset = UNSET,
) -> Response[Error | TopicState]:
    """Get topic state

     Current state: head seq, earliest retained seq, count, byte size, config.
    The cheap "where am I / how much lag" call. By default it bumps the topic's
    auto-priority recency clock. A state read never auto-creates.

    Args:
        topic (str):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicState]
    """

    kwargs = _get_kwargs(
        topic=topic,
        touch=touch,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    touch: bool | Unset = UNSET,
) -> Error | TopicState | None:
    """Get topic state

     Current state: head seq, earliest retained seq, count, byte size, config.
    The cheap "where am I / how much lag" call. By default it bumps the topic's
    auto-priority recency clock. A state read never auto-creates.

    Args:
        topic (str):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicState
    """

    return sync_detailed(
        topic=topic,
        client=client,
        touch=touch,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    touch: bool | Unset = UNSET,
) -> Response[Error | TopicState]:
    """Get topic state

     Current state: head seq, earliest retained seq, count, byte size, config.
    The cheap "where am I / how much lag" call. By default it bumps the topic's
    auto-priority recency clock. A state read never auto-creates.

    Args:
        topic (str):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicState]
    """

    kwargs = _get_kwargs(
        topic=topic,
        touch=touch,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    touch: bool | Unset = UNSET,
) -> Error | TopicState | None:
    """Get topic state

     Current state: head seq, earliest retained seq, count, byte size, config.
    The cheap "where am I / how much lag" call. By default it bumps the topic's
    auto-priority recency clock. A state read never auto-creates.

    Args:
        topic (str):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicState
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            touch=touch,
        )
    ).parsed
