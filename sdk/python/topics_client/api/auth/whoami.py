from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.whoami import Whoami
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/whoami",
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | Whoami:
    if response.status_code == 200:
        response_200 = Whoami.from_dict(response.json())

        return response_200

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | Whoami]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Error | Whoami]:
    """What the caller's credentials allow

     Who the request's API key is and what it may do, so a client (the web
    console, the CLI) shows only what the key allows: the key's identity
    (`key_id`, its 1-based position in `TOPICS_API_KEYS`, and `key`, how logs
    and errors name it — never its secret), its `scopes` (sorted) and its
    `prefixes` allowlist (empty: any name). Any known key may ask — no scope
    is needed; a missing or unknown key is `401 unauthorized`. With no keys
    configured (dev mode) the answer is `auth: dev`: no key, all four scopes,
    any name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Whoami]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> Error | Whoami | None:
    """What the caller's credentials allow

     Who the request's API key is and what it may do, so a client (the web
    console, the CLI) shows only what the key allows: the key's identity
    (`key_id`, its 1-based position in `TOPICS_API_KEYS`, and `key`, how logs
    and errors name it — never its secret), its `scopes` (sorted) and its
    `prefixes` allowlist (empty: any name). Any known key may ask — no scope
    is needed; a missing or unknown key is `401 unauthorized`. With no keys
    configured (dev mode) the answer is `auth: dev`: no key, all four scopes,
    any name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Whoami
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Error | Whoami]:
    """What the caller's credentials allow

     Who the request's API key is and what it may do, so a client (the web
    console, the CLI) shows only what the key allows: the key's identity
    (`key_id`, its 1-based position in `TOPICS_API_KEYS`, and `key`, how logs
    and errors name it — never its secret), its `scopes` (sorted) and its
    `prefixes` allowlist (empty: any name). Any known key may ask — no scope
    is needed; a missing or unknown key is `401 unauthorized`. With no keys
    configured (dev mode) the answer is `auth: dev`: no key, all four scopes,
    any name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Whoami]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> Error | Whoami | None:
    """What the caller's credentials allow

     Who the request's API key is and what it may do, so a client (the web
    console, the CLI) shows only what the key allows: the key's identity
    (`key_id`, its 1-based position in `TOPICS_API_KEYS`, and `key`, how logs
    and errors name it — never its secret), its `scopes` (sorted) and its
    `prefixes` allowlist (empty: any name). Any known key may ask — no scope
    is needed; a missing or unknown key is `401 unauthorized`. With no keys
    configured (dev mode) the answer is `auth: dev`: no key, all four scopes,
    any name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Whoami
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
