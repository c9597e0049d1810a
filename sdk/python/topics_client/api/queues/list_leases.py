from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.lease_list import LeaseList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    node: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["node"] = node

    params["page_size"] = page_size

    params["cursor"] = cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/topics/{topic}/leases".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Error | LeaseList:
    if response.status_code == 200:
        response_200 = LeaseList.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | LeaseList]:
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
    node: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | LeaseList]:
    """List who holds which job (queue)

     The queue's active leases, ascending by `seq`, optionally only those of one
    `node` — who holds what, like Redis `XPENDING` (an extension:
    docs/DECISIONS.md, "Queue health"). Expired leases are not listed (a read of a
    queue applies lazy lease expiry first). Paged like the other lists:
    `next_cursor` is present only when more leases follow; pass it back as
    `cursor`. Each page looks at every active lease of the queue: an operator's
    view, not a hot path.

    Order of checks: the topic must exist (`404 topic_not_found`) and be a queue
    (`409 not_a_queue` on a log topic) — both answered before the endpoint's own
    parameters are validated.

    Args:
        topic (str):
        node (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LeaseList]
    """

    kwargs = _get_kwargs(
        topic=topic,
        node=node,
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
    node: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | LeaseList | None:
    """List who holds which job (queue)

     The queue's active leases, ascending by `seq`, optionally only those of one
    `node` — who holds what, like Redis `XPENDING` (an extension:
    docs/DECISIONS.md, "Queue health"). Expired leases are not listed (a read of a
    queue applies lazy lease expiry first). Paged like the other lists:
    `next_cursor` is present only when more leases follow; pass it back as
    `cursor`. Each page looks at every active lease of the queue: an operator's
    view, not a hot path.

    Order of checks: the topic must exist (`404 topic_not_found`) and be a queue
    (`409 not_a_queue` on a log topic) — both answered before the endpoint's own
    parameters are validated.

    Args:
        topic (str):
        node (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LeaseList
    """

    return sync_detailed(
        topic=topic,
        client=client,
        node=node,
        page_size=page_size,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    node: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Response[Error | LeaseList]:
    """List who holds which job (queue)

     The queue's active leases, ascending by `seq`, optionally only those of one
    `node` — who holds what, like Redis `XPENDING` (an extension:
    docs/DECISIONS.md, "Queue health"). Expired leases are not listed (a read of a
    queue applies lazy lease expiry first). Paged like the other lists:
    `next_cursor` is present only when more leases follow; pass it back as
    `cursor`. Each page looks at every active lease of the queue: an operator's
    view, not a hot path.

    Order of checks: the topic must exist (`404 topic_not_found`) and be a queue
    (`409 not_a_queue` on a log topic) — both answered before the endpoint's own
    parameters are validated.

    Args:
        topic (str):
        node (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | LeaseList]
    """

    kwargs = _get_kwargs(
        topic=topic,
        node=node,
        page_size=page_size,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    node: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    cursor: str | Unset = UNSET,
) -> Error | LeaseList | None:
    """List who holds which job (queue)

     The queue's active leases, ascending by `seq`, optionally only those of one
    `node` — who holds what, like Redis `XPENDING` (an extension:
    docs/DECISIONS.md, "Queue health"). Expired leases are not listed (a read of a
    queue applies lazy lease expiry first). Paged like the other lists:
    `next_cursor` is present only when more leases follow; pass it back as
    `cursor`. Each page looks at every active lease of the queue: an operator's
    view, not a hot path.

    Order of checks: the topic must exist (`404 topic_not_found`) and be a queue
    (`409 not_a_queue` on a log topic) — both answered before the endpoint's own
    parameters are validated.

    Args:
        topic (str):
        node (str | Unset):
        page_size (int | Unset):
        cursor (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | LeaseList
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            node=node,
            page_size=page_size,
            cursor=cursor,
        )
    ).parsed
