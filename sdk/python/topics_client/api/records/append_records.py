from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.append_request import AppendRequest
from ...models.append_response import AppendResponse
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    body: AppendRequest,
    return_seqs: bool | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    params: dict[str, Any] = {}

    params["return_seqs"] = return_seqs

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v0/topics/{topic}".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AppendResponse | Error:
    if response.status_code == 200:
        response_200 = AppendResponse.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = AppendResponse.from_dict(response.json())

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

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = Error.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AppendResponse | Error]:
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
    body: AppendRequest,
    return_seqs: bool | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[AppendResponse | Error]:
    """Append records

     Append one or many records; the server assigns contiguous seqs in array
    order and returns them. A write is atomic: all records commit or none do.
    Inline `config` is applied only if this write creates the topic (`201`).
    Durable (`fsync`) topics hold the response until the fsync completes.
    A full `discard: "reject"` topic refuses the write with `422 topic_full`
    (nothing appended); `discard: "old"` evicts the oldest and succeeds.
    With a matching in-window `idempotency_key` the original seqs are returned
    with `deduped: true` and nothing is appended.

    Args:
        topic (str):
        return_seqs (bool | Unset):
        idempotency_key (str | Unset):
        body (AppendRequest): An append of one or many records.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AppendResponse | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
        return_seqs=return_seqs,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AppendRequest,
    return_seqs: bool | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> AppendResponse | Error | None:
    """Append records

     Append one or many records; the server assigns contiguous seqs in array
    order and returns them. A write is atomic: all records commit or none do.
    Inline `config` is applied only if this write creates the topic (`201`).
    Durable (`fsync`) topics hold the response until the fsync completes.
    A full `discard: "reject"` topic refuses the write with `422 topic_full`
    (nothing appended); `discard: "old"` evicts the oldest and succeeds.
    With a matching in-window `idempotency_key` the original seqs are returned
    with `deduped: true` and nothing is appended.

    Args:
        topic (str):
        return_seqs (bool | Unset):
        idempotency_key (str | Unset):
        body (AppendRequest): An append of one or many records.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AppendResponse | Error
    """

    return sync_detailed(
        topic=topic,
        client=client,
        body=body,
        return_seqs=return_seqs,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AppendRequest,
    return_seqs: bool | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> Response[AppendResponse | Error]:
    """Append records

     Append one or many records; the server assigns contiguous seqs in array
    order and returns them. A write is atomic: all records commit or none do.
    Inline `config` is applied only if this write creates the topic (`201`).
    Durable (`fsync`) topics hold the response until the fsync completes.
    A full `discard: "reject"` topic refuses the write with `422 topic_full`
    (nothing appended); `discard: "old"` evicts the oldest and succeeds.
    With a matching in-window `idempotency_key` the original seqs are returned
    with `deduped: true` and nothing is appended.

    Args:
        topic (str):
        return_seqs (bool | Unset):
        idempotency_key (str | Unset):
        body (AppendRequest): An append of one or many records.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AppendResponse | Error]
    """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
        return_seqs=return_seqs,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: AppendRequest,
    return_seqs: bool | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,
) -> AppendResponse | Error | None:
    """Append records

     Append one or many records; the server assigns contiguous seqs in array
    order and returns them. A write is atomic: all records commit or none do.
    Inline `config` is applied only if this write creates the topic (`201`).
    Durable (`fsync`) topics hold the response until the fsync completes.
    A full `discard: "reject"` topic refuses the write with `422 topic_full`
    (nothing appended); `discard: "old"` evicts the oldest and succeeds.
    With a matching in-window `idempotency_key` the original seqs are returned
    with `deduped: true` and nothing is appended.

    Args:
        topic (str):
        return_seqs (bool | Unset):
        idempotency_key (str | Unset):
        body (AppendRequest): An append of one or many records.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AppendResponse | Error
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
            return_seqs=return_seqs,
            idempotency_key=idempotency_key,
        )
    ).parsed
