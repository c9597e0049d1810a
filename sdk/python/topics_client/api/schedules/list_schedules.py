from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.schedule_list import ScheduleList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    prefix: str | Unset = UNSET,
    topic: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["prefix"] = prefix

    params["topic"] = topic

    params["page_size"] = page_size

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/schedules",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ScheduleList:
    if response.status_code == 200:
        response_200 = ScheduleList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | ScheduleList]:
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
    topic: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | ScheduleList]:
    """List schedules

     Enumerate schedules ordered by name, optionally filtered by name prefix and
    target `topic`, paginated with an opaque cursor like the other lists:
    `next_cursor` is present only when more pages exist. With a prefix-restricted
    key the list is filtered to the key's allowlist. Summaries leave out `records`
    (`GET /v0/schedules/{schedule}` has them).

    Args:
        prefix (str | Unset):
        topic (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ScheduleList]
    """

    kwargs = _get_kwargs(
        prefix=prefix,
        topic=topic,
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
    topic: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | ScheduleList | None:
    """List schedules

     Enumerate schedules ordered by name, optionally filtered by name prefix and
    target `topic`, paginated with an opaque cursor like the other lists:
    `next_cursor` is present only when more pages exist. With a prefix-restricted
    key the list is filtered to the key's allowlist. Summaries leave out `records`
    (`GET /v0/schedules/{schedule}` has them).

    Args:
        prefix (str | Unset):
        topic (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ScheduleList
    """

    return sync_detailed(
        client=client,
        prefix=prefix,
        topic=topic,
        page_size=page_size,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    topic: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | ScheduleList]:
    """List schedules

     Enumerate schedules ordered by name, optionally filtered by name prefix and
    target `topic`, paginated with an opaque cursor like the other lists:
    `next_cursor` is present only when more pages exist. With a prefix-restricted
    key the list is filtered to the key's allowlist. Summaries leave out `records`
    (`GET /v0/schedules/{schedule}` has them).

    Args:
        prefix (str | Unset):
        topic (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ScheduleList]
    """

    kwargs = _get_kwargs(
        prefix=prefix,
        topic=topic,
        page_size=page_size,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    prefix: str | Unset = UNSET,
    topic: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | ScheduleList | None:
    """List schedules

     Enumerate schedules ordered by name, optionally filtered by name prefix and
    target `topic`, paginated with an opaque cursor like the other lists:
    `next_cursor` is present only when more pages exist. With a prefix-restricted
    key the list is filtered to the key's allowlist. Summaries leave out `records`
    (`GET /v0/schedules/{schedule}` has them).

    Args:
        prefix (str | Unset):
        topic (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ScheduleList
    """

    return (
        await asyncio_detailed(
            client=client,
            prefix=prefix,
            topic=topic,
            page_size=page_size,
            cursor=cursor,
        )
    ).parsed
