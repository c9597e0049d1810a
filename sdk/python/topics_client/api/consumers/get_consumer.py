from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.consumer_state import ConsumerState
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    consumer: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/topics/{topic}/consumers/{consumer}".format(
            topic=quote(str(topic), safe=""),
            consumer=quote(str(consumer), safe=""),
        ),
    }

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
) -> Response[ConsumerState | Error]:
    """Get a named consumer

     The consumer's committed `cursor`, the topic's `head_seq`, the `lag` between
    them (`head_seq - cursor`, as a diff's `lag`) and when the cursor was last
    set (`committed_at_ms`).

    Args:
        topic (str):
        consumer (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerState | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        consumer=consumer,
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
) -> ConsumerState | Error | None:
    """Get a named consumer

     The consumer's committed `cursor`, the topic's `head_seq`, the `lag` between
    them (`head_seq - cursor`, as a diff's `lag`) and when the cursor was last
    set (`committed_at_ms`).

    Args:
        topic (str):
        consumer (str):

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
    ).parsed


async def asyncio_detailed(
    topic: str,
    consumer: str,
    *,
    client: AuthenticatedClient,
) -> Response[ConsumerState | Error]:
    """Get a named consumer

     The consumer's committed `cursor`, the topic's `head_seq`, the `lag` between
    them (`head_seq - cursor`, as a diff's `lag`) and when the cursor was last
    set (`committed_at_ms`).

    Args:
        topic (str):
        consumer (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerState | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        consumer=consumer,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    consumer: str,
    *,
    client: AuthenticatedClient,
) -> ConsumerState | Error | None:
    """Get a named consumer

     The consumer's committed `cursor`, the topic's `head_seq`, the `lag` between
    them (`head_seq - cursor`, as a diff's `lag`) and when the cursor was last
    set (`committed_at_ms`).

    Args:
        topic (str):
        consumer (str):

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
        )
    ).parsed
