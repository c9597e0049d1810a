from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.router_delete_response import RouterDeleteResponse
from ...types import Response


def _get_kwargs(
    router: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v0/routers/{router}".format(
            router=quote(str(router), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | RouterDeleteResponse:
    if response.status_code == 200:
        response_200 = RouterDeleteResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | RouterDeleteResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    router: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | RouterDeleteResponse]:
    """Delete a router

     Idempotent. Forwarding stops at once; records already forwarded stay in
    dest (forwarding is a copy, not a link). `deleted: false` if absent.

    Args:
        router (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RouterDeleteResponse]
    """

    kwargs = _get_kwargs(
        router=router,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    router: str,
    *,
    client: AuthenticatedClient,
) -> Error | RouterDeleteResponse | None:
    """Delete a router

     Idempotent. Forwarding stops at once; records already forwarded stay in
    dest (forwarding is a copy, not a link). `deleted: false` if absent.

    Args:
        router (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RouterDeleteResponse
    """

    return sync_detailed(
        router=router,
        client=client,
    ).parsed


async def asyncio_detailed(
    router: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | RouterDeleteResponse]:
    """Delete a router

     Idempotent. Forwarding stops at once; records already forwarded stay in
    dest (forwarding is a copy, not a link). `deleted: false` if absent.

    Args:
        router (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RouterDeleteResponse]
    """

    kwargs = _get_kwargs(
        router=router,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    router: str,
    *,
    client: AuthenticatedClient,
) -> Error | RouterDeleteResponse | None:
    """Delete a router

     Idempotent. Forwarding stops at once; records already forwarded stay in
    dest (forwarding is a copy, not a link). `deleted: false` if absent.

    Args:
        router (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RouterDeleteResponse
    """

    return (
        await asyncio_detailed(
            router=router,
            client=client,
        )
    ).parsed
