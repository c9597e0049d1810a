from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.topic_list import TopicList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    touch: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["page_size"] = page_size

    params["cursor"] = cursor

    params["touch"] = touch

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/topics",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | TopicList:
    if response.status_code == 200:
        response_200 = TopicList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | TopicList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    touch: bool | Unset = UNSET,
) -> Response[Error | TopicList]:
    """List topics

     Enumerate topics with summary state, ordered by name and paginated with an
    opaque cursor. `next_cursor` is present only when more pages exist; its
    absence means the last page. With a prefix-restricted key the list is
    filtered to the key's allowlist. Listing does not bump auto-priority unless
    `touch=true`.

    Args:
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicList]
    """

    kwargs = _get_kwargs(
        prefix=prefix,
        page_size=page_size,
        cursor=cursor,
        touch=touch,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    touch: bool | Unset = UNSET,
) -> Error | TopicList | None:
    """List topics

     Enumerate topics with summary state, ordered by name and paginated with an
    opaque cursor. `next_cursor` is present only when more pages exist; its
    absence means the last page. With a prefix-restricted key the list is
    filtered to the key's allowlist. Listing does not bump auto-priority unless
    `touch=true`.

    Args:
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicList
    """

    return sync_detailed(
        client=client,
        prefix=prefix,
        page_size=page_size,
        cursor=cursor,
        touch=touch,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    touch: bool | Unset = UNSET,
) -> Response[Error | TopicList]:
    """List topics

     Enumerate topics with summary state, ordered by name and paginated with an
    opaque cursor. `next_cursor` is present only when more pages exist; its
    absence means the last page. With a prefix-restricted key the list is
    filtered to the key's allowlist. Listing does not bump auto-priority unless
    `touch=true`.

    Args:
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | TopicList]
    """

    kwargs = _get_kwargs(
        prefix=prefix,
        page_size=page_size,
        cursor=cursor,
        touch=touch,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
    touch: bool | Unset = UNSET,
) -> Error | TopicList | None:
    """List topics

     Enumerate topics with summary state, ordered by name and paginated with an
    opaque cursor. `next_cursor` is present only when more pages exist; its
    absence means the last page. With a prefix-restricted key the list is
    filtered to the key's allowlist. Listing does not bump auto-priority unless
    `touch=true`.

    Args:
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):
        touch (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | TopicList
    """

    return (
        await asyncio_detailed(
            client=client,
            prefix=prefix,
            page_size=page_size,
            cursor=cursor,
            touch=touch,
        )
    ).parsed
