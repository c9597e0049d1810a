from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.router_list import RouterList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    prefix: str | Unset = UNSET,
    source: str | Unset = UNSET,
    dest: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["source"] = source

    params["dest"] = dest

    params["page_size"] = page_size

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/routers",
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | RouterList:
    if response.status_code == 200:
        response_200 = RouterList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | RouterList]:
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
    source: str | Unset = UNSET,
    dest: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | RouterList]:
    """List routers

     Enumerate routers ordered by name, optionally filtered by name prefix,
    `source` and `dest`, paginated with an opaque cursor. `next_cursor` is
    present only when more pages exist. With a prefix-restricted key the list is
    filtered to the key's allowlist.

    Args:
        prefix (str | Unset):
        source (str | Unset):
        dest (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RouterList]
    """

    kwargs = _get_kwargs(
        prefix=prefix,
        source=source,
        dest=dest,
        page_size=page_size,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    source: str | Unset = UNSET,
    dest: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | RouterList | None:
    """List routers

     Enumerate routers ordered by name, optionally filtered by name prefix,
    `source` and `dest`, paginated with an opaque cursor. `next_cursor` is
    present only when more pages exist. With a prefix-restricted key the list is
    filtered to the key's allowlist.

    Args:
        prefix (str | Unset):
        source (str | Unset):
        dest (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RouterList
    """

    return sync_detailed(
        client=client,
        prefix=prefix,
        source=source,
        dest=dest,
        page_size=page_size,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    source: str | Unset = UNSET,
    dest: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | RouterList]:
    """List routers

     Enumerate routers ordered by name, optionally filtered by name prefix,
    `source` and `dest`, paginated with an opaque cursor. `next_cursor` is
    present only when more pages exist. With a prefix-restricted key the list is
    filtered to the key's allowlist.

    Args:
        prefix (str | Unset):
        source (str | Unset):
        dest (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RouterList]
    """

    kwargs = _get_kwargs(
        prefix=prefix,
        source=source,
        dest=dest,
        page_size=page_size,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    source: str | Unset = UNSET,
    dest: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | RouterList | None:
    """List routers

     Enumerate routers ordered by name, optionally filtered by name prefix,
    `source` and `dest`, paginated with an opaque cursor. `next_cursor` is
    present only when more pages exist. With a prefix-restricted key the list is
    filtered to the key's allowlist.

    Args:
        prefix (str | Unset):
        source (str | Unset):
        dest (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RouterList
    """

    return (
        await asyncio_detailed(
            client=client,
            prefix=prefix,
            source=source,
            dest=dest,
            page_size=page_size,
            cursor=cursor,
        )
    ).parsed
