from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.schedule_state import ScheduleState
from ...types import Response


def _get_kwargs(
    schedule: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v0/schedules/{schedule}".format(
            schedule=quote(str(schedule), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ScheduleState:
    if response.status_code == 200:
        response_200 = ScheduleState.from_dict(response.json())

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
) -> Response[Error | ScheduleState]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    schedule: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | ScheduleState]:
    """Get a schedule

     The schedule as put, with its progress: `next_run_ms` (the next due time not
    run yet — in the past while a failed run is being retried), `last_run_ms` (the
    due time of the last run), `runs_total`, and `last_error` (why the last
    attempt failed, until a run succeeds).

    Args:
        schedule (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ScheduleState]
    """

    kwargs = _get_kwargs(
        schedule=schedule,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    schedule: str,
    *,
    client: AuthenticatedClient,
) -> Error | ScheduleState | None:
    """Get a schedule

     The schedule as put, with its progress: `next_run_ms` (the next due time not
    run yet — in the past while a failed run is being retried), `last_run_ms` (the
    due time of the last run), `runs_total`, and `last_error` (why the last
    attempt failed, until a run succeeds).

    Args:
        schedule (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ScheduleState
    """

    return sync_detailed(
        schedule=schedule,
        client=client,
    ).parsed


async def asyncio_detailed(
    schedule: str,
    *,
    client: AuthenticatedClient,
) -> Response[Error | ScheduleState]:
    """Get a schedule

     The schedule as put, with its progress: `next_run_ms` (the next due time not
    run yet — in the past while a failed run is being retried), `last_run_ms` (the
    due time of the last run), `runs_total`, and `last_error` (why the last
    attempt failed, until a run succeeds).

    Args:
        schedule (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ScheduleState]
    """

    kwargs = _get_kwargs(
        schedule=schedule,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    schedule: str,
    *,
    client: AuthenticatedClient,
) -> Error | ScheduleState | None:
    """Get a schedule

     The schedule as put, with its progress: `next_run_ms` (the next due time not
    run yet — in the past while a failed run is being retried), `last_run_ms` (the
    due time of the last run), `runs_total`, and `last_error` (why the last
    attempt failed, until a run succeeds).

    Args:
        schedule (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ScheduleState
    """

    return (
        await asyncio_detailed(
            schedule=schedule,
            client=client,
        )
    ).parsed
