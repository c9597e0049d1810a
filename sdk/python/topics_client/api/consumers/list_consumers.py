from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.consumer_list import ConsumerList
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["page_size"] = page_size

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/topics/{topic}/consumers".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ConsumerList | Error:
    if response.status_code == 200:
        response_200 = ConsumerList.from_dict(response.json())

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
) -> Response[ConsumerList | Error]:
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
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[ConsumerList | Error]:
    """List a topic's named consumers

     The topic's named consumers with their cursors and lag, ordered by name and
    paginated with an opaque cursor like the other lists: `next_cursor` is present
    only when more pages exist. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerList | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        prefix=prefix,
        page_size=page_size,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> ConsumerList | Error | None:
    """List a topic's named consumers

     The topic's named consumers with their cursors and lag, ordered by name and
    paginated with an opaque cursor like the other lists: `next_cursor` is present
    only when more pages exist. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerList | Error
    """

    return sync_detailed(
        topic=topic,
        client=client,
        prefix=prefix,
        page_size=page_size,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[ConsumerList | Error]:
    """List a topic's named consumers

     The topic's named consumers with their cursors and lag, ordered by name and
    paginated with an opaque cursor like the other lists: `next_cursor` is present
    only when more pages exist. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerList | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        prefix=prefix,
        page_size=page_size,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> ConsumerList | Error | None:
    """List a topic's named consumers

     The topic's named consumers with their cursors and lag, ordered by name and
    paginated with an opaque cursor like the other lists: `next_cursor` is present
    only when more pages exist. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        prefix (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerList | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            prefix=prefix,
            page_size=page_size,
            cursor=cursor,
        )
    ).parsed
