from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.router_config import RouterConfig
from ...models.router_put_response import RouterPutResponse
from ...types import Response


def _get_kwargs(
    router: str,
    *,
    body: RouterConfig,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v0/routers/{router}".format(
            router=quote(str(router), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | RouterPutResponse:
    if response.status_code == 200:
        response_200 = RouterPutResponse.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = RouterPutResponse.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | RouterPutResponse]:
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
    body: RouterConfig,
) -> Response[Error | RouterPutResponse]:
    """Create or configure a router (idempotent upsert)

     A router forwards every record appended to `source` into `dest`,
    asynchronously: the source's writes are acknowledged without waiting, and a
    background step per router copies records in source order, driven by a
    durable cursor. Each copy gets a fresh `$seq` and `$ts` in `dest` and
    carries `data`, `meta`, `$node` and `$tag` (the last two per `preserve_*`).
    Copies are derived, not separately logged: one source append is one WAL
    write whatever the fan-out, and after a crash the copies are re-derived
    from the source with the same dest seqs — so forwarded records are exactly
    as durable as the source's (docs/DECISIONS.md, "Derived copies").

    New → `201`; identical or changed → `200`. A missing `source` is created
    with the default config; a missing `dest` too, unless `create_dest` is
    false (`404 topic_not_found`). A PUT changing `source` or `dest` restarts the
    router at the new source's head (no backfill) and re-runs the cycle and
    fan-in checks. A router that would close a directed cycle is
    `409 router_cycle` (with `detail.cycle`) unless `allow_cycle`; then a record
    stops after 8 hops. A second source into a dest that is already a router's
    destination is `409 topic_exists_incompatible` with
    `detail.reason: "router_dest_fan_in"`. A full `discard: "reject"` dest makes
    the router hold its cursor and retry with backoff. The response echoes the
    router (without `create_dest`).

    Args:
        router (str):
        body (RouterConfig): A router definition (the body of `PUT /v0/routers/{router}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RouterPutResponse]
    """

    kwargs = _get_kwargs(
        router=router,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    router: str,
    *,
    client: AuthenticatedClient,
    body: RouterConfig,
) -> Error | RouterPutResponse | None:
    """Create or configure a router (idempotent upsert)

     A router forwards every record appended to `source` into `dest`,
    asynchronously: the source's writes are acknowledged without waiting, and a
    background step per router copies records in source order, driven by a
    durable cursor. Each copy gets a fresh `$seq` and `$ts` in `dest` and
    carries `data`, `meta`, `$node` and `$tag` (the last two per `preserve_*`).
    Copies are derived, not separately logged: one source append is one WAL
    write whatever the fan-out, and after a crash the copies are re-derived
    from the source with the same dest seqs — so forwarded records are exactly
    as durable as the source's (docs/DECISIONS.md, "Derived copies").

    New → `201`; identical or changed → `200`. A missing `source` is created
    with the default config; a missing `dest` too, unless `create_dest` is
    false (`404 topic_not_found`). A PUT changing `source` or `dest` restarts the
    router at the new source's head (no backfill) and re-runs the cycle and
    fan-in checks. A router that would close a directed cycle is
    `409 router_cycle` (with `detail.cycle`) unless `allow_cycle`; then a record
    stops after 8 hops. A second source into a dest that is already a router's
    destination is `409 topic_exists_incompatible` with
    `detail.reason: "router_dest_fan_in"`. A full `discard: "reject"` dest makes
    the router hold its cursor and retry with backoff. The response echoes the
    router (without `create_dest`).

    Args:
        router (str):
        body (RouterConfig): A router definition (the body of `PUT /v0/routers/{router}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RouterPutResponse
    """

    return sync_detailed(
        router=router,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    router: str,
    *,
    client: AuthenticatedClient,
    body: RouterConfig,
) -> Response[Error | RouterPutResponse]:
    """Create or configure a router (idempotent upsert)

     A router forwards every record appended to `source` into `dest`,
    asynchronously: the source's writes are acknowledged without waiting, and a
    background step per router copies records in source order, driven by a
    durable cursor. Each copy gets a fresh `$seq` and `$ts` in `dest` and
    carries `data`, `meta`, `$node` and `$tag` (the last two per `preserve_*`).
    Copies are derived, not separately logged: one source append is one WAL
    write whatever the fan-out, and after a crash the copies are re-derived
    from the source with the same dest seqs — so forwarded records are exactly
    as durable as the source's (docs/DECISIONS.md, "Derived copies").

    New → `201`; identical or changed → `200`. A missing `source` is created
    with the default config; a missing `dest` too, unless `create_dest` is
    false (`404 topic_not_found`). A PUT changing `source` or `dest` restarts the
    router at the new source's head (no backfill) and re-runs the cycle and
    fan-in checks. A router that would close a directed cycle is
    `409 router_cycle` (with `detail.cycle`) unless `allow_cycle`; then a record
    stops after 8 hops. A second source into a dest that is already a router's
    destination is `409 topic_exists_incompatible` with
    `detail.reason: "router_dest_fan_in"`. A full `discard: "reject"` dest makes
    the router hold its cursor and retry with backoff. The response echoes the
    router (without `create_dest`).

    Args:
        router (str):
        body (RouterConfig): A router definition (the body of `PUT /v0/routers/{router}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | RouterPutResponse]
    """

    kwargs = _get_kwargs(
        router=router,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    router: str,
    *,
    client: AuthenticatedClient,
    body: RouterConfig,
) -> Error | RouterPutResponse | None:
    """Create or configure a router (idempotent upsert)

     A router forwards every record appended to `source` into `dest`,
    asynchronously: the source's writes are acknowledged without waiting, and a
    background step per router copies records in source order, driven by a
    durable cursor. Each copy gets a fresh `$seq` and `$ts` in `dest` and
    carries `data`, `meta`, `$node` and `$tag` (the last two per `preserve_*`).
    Copies are derived, not separately logged: one source append is one WAL
    write whatever the fan-out, and after a crash the copies are re-derived
    from the source with the same dest seqs — so forwarded records are exactly
    as durable as the source's (docs/DECISIONS.md, "Derived copies").

    New → `201`; identical or changed → `200`. A missing `source` is created
    with the default config; a missing `dest` too, unless `create_dest` is
    false (`404 topic_not_found`). A PUT changing `source` or `dest` restarts the
    router at the new source's head (no backfill) and re-runs the cycle and
    fan-in checks. A router that would close a directed cycle is
    `409 router_cycle` (with `detail.cycle`) unless `allow_cycle`; then a record
    stops after 8 hops. A second source into a dest that is already a router's
    destination is `409 topic_exists_incompatible` with
    `detail.reason: "router_dest_fan_in"`. A full `discard: "reject"` dest makes
    the router hold its cursor and retry with backoff. The response echoes the
    router (without `create_dest`).

    Args:
        router (str):
        body (RouterConfig): A router definition (the body of `PUT /v0/routers/{router}`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | RouterPutResponse
    """

    return (
        await asyncio_detailed(
            router=router,
            client=client,
            body=body,
        )
    ).parsed
