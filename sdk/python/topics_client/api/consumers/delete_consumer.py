from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.consumer_delete_response import ConsumerDeleteResponse
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    topic: str,
    consumer: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v0/topics/{topic}/consumers/{consumer}".format(
            topic=quote(str(topic), safe=""),
            consumer=quote(str(consumer), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ConsumerDeleteResponse | Error:
    if response.status_code == 200:
        response_200 = ConsumerDeleteResponse.from_dict(response.json())

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
) -> Response[ConsumerDeleteResponse | Error]:
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
) -> Response[ConsumerDeleteResponse | Error]:
    """Delete a named consumer

     Idempotent: `deleted: false` if the topic has no such consumer. The topic's
    records are untouched. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        consumer (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerDeleteResponse | Error]
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
) -> ConsumerDeleteResponse | Error | None:
    """Delete a named consumer

     Idempotent: `deleted: false` if the topic has no such consumer. The topic's
    records are untouched. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        consumer (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerDeleteResponse | Error
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
) -> Response[ConsumerDeleteResponse | Error]:
    """Delete a named consumer

     Idempotent: `deleted: false` if the topic has no such consumer. The topic's
    records are untouched. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        consumer (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConsumerDeleteResponse | Error]
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
) -> ConsumerDeleteResponse | Error | None:
    """Delete a named consumer

     Idempotent: `deleted: false` if the topic has no such consumer. The topic's
    records are untouched. A missing topic is `404 topic_not_found`.

    Args:
        topic (str):
        consumer (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConsumerDeleteResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            consumer=consumer,
            client=client,
        )
    ).parsed
