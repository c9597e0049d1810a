from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.schedule_config import ScheduleConfig
from ...models.schedule_put_response import SchedulePutResponse
from ...types import Response


def _get_kwargs(
    schedule: str,
    *,
    body: ScheduleConfig,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v0/schedules/{schedule}".format(
            schedule=quote(str(schedule), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | SchedulePutResponse:
    if response.status_code == 200:
        response_200 = SchedulePutResponse.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = SchedulePutResponse.from_dict(response.json())

        return response_201

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Error.from_dict(response.json())

        return response_415

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | SchedulePutResponse]:
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
    body: ScheduleConfig,
) -> Response[Error | SchedulePutResponse]:
    """Create or configure a schedule (idempotent upsert)

     A schedule appends `records` to `topic` on a five-field cron expression
    (`cron`, UTC) or every `every_ms` milliseconds — the first run one interval
    after the PUT (an extension: docs/DECISIONS.md, "Schedules"; Celery beat,
    arq's and RQ's `cron`, NATS scheduled messages). Each run is an append through
    the write path (the topic's durability class applies), keyed by an
    idempotency key derived from the schedule's name and the due time, and logged
    with its due time: a due time never runs twice, even across a crash.

    `records` is validated like the body of `POST /v0/topics/{topic}/records`
    (same limits and errors: `400 batch_too_large`, `record_too_large`,
    `invalid_request`). A missing `topic` is created with the default config
    (`429` with `detail.limit: "max_topics"` if that cap is reached); deleting
    the topic removes its schedules. `missed` says what happens to due times that
    passed while the server was down: `skip` them (the next run is the next due
    time in the future) or append `once` for all of them at start-up. While the
    server runs, a late or failed run (a full `discard: "reject"` topic, a
    read-only WAL) is retried with backoff, and one append covers the due times
    that passed meanwhile — never a burst.

    New → `201`; identical or changed → `200`. A change of `cron` or `every_ms`
    starts the timing over from the PUT; other changes keep it. A new schedule
    beyond `TOPICS_MAX_SCHEDULES` is `429 throttled` with
    `detail.limit: "max_schedules"`. Records with `delay_ms` (delayed jobs) need
    `topic` to be a queue already: else `409 not_a_queue`, as each run's append
    would answer. The response is the schedule with its progress, as `GET`
    returns it.

    Args:
        schedule (str):
        body (ScheduleConfig): A schedule definition (the body of `PUT /v0/schedules/{schedule}`):
            `topic`,
            `records`, and exactly one of `cron` and `every_ms` (`400 invalid_request`
            otherwise).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SchedulePutResponse]
    """

    kwargs = _get_kwargs(
        schedule=schedule,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: ScheduleConfig,
) -> Error | SchedulePutResponse | None:
    """Create or configure a schedule (idempotent upsert)

     A schedule appends `records` to `topic` on a five-field cron expression
    (`cron`, UTC) or every `every_ms` milliseconds — the first run one interval
    after the PUT (an extension: docs/DECISIONS.md, "Schedules"; Celery beat,
    arq's and RQ's `cron`, NATS scheduled messages). Each run is an append through
    the write path (the topic's durability class applies), keyed by an
    idempotency key derived from the schedule's name and the due time, and logged
    with its due time: a due time never runs twice, even across a crash.

    `records` is validated like the body of `POST /v0/topics/{topic}/records`
    (same limits and errors: `400 batch_too_large`, `record_too_large`,
    `invalid_request`). A missing `topic` is created with the default config
    (`429` with `detail.limit: "max_topics"` if that cap is reached); deleting
    the topic removes its schedules. `missed` says what happens to due times that
    passed while the server was down: `skip` them (the next run is the next due
    time in the future) or append `once` for all of them at start-up. While the
    server runs, a late or failed run (a full `discard: "reject"` topic, a
    read-only WAL) is retried with backoff, and one append covers the due times
    that passed meanwhile — never a burst.

    New → `201`; identical or changed → `200`. A change of `cron` or `every_ms`
    starts the timing over from the PUT; other changes keep it. A new schedule
    beyond `TOPICS_MAX_SCHEDULES` is `429 throttled` with
    `detail.limit: "max_schedules"`. Records with `delay_ms` (delayed jobs) need
    `topic` to be a queue already: else `409 not_a_queue`, as each run's append
    would answer. The response is the schedule with its progress, as `GET`
    returns it.

    Args:
        schedule (str):
        body (ScheduleConfig): A schedule definition (the body of `PUT /v0/schedules/{schedule}`):
            `topic`,
            `records`, and exactly one of `cron` and `every_ms` (`400 invalid_request`
            otherwise).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SchedulePutResponse
    """

    return sync_detailed(
        schedule=schedule,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: ScheduleConfig,
) -> Response[Error | SchedulePutResponse]:
    """Create or configure a schedule (idempotent upsert)

     A schedule appends `records` to `topic` on a five-field cron expression
    (`cron`, UTC) or every `every_ms` milliseconds — the first run one interval
    after the PUT (an extension: docs/DECISIONS.md, "Schedules"; Celery beat,
    arq's and RQ's `cron`, NATS scheduled messages). Each run is an append through
    the write path (the topic's durability class applies), keyed by an
    idempotency key derived from the schedule's name and the due time, and logged
    with its due time: a due time never runs twice, even across a crash.

    `records` is validated like the body of `POST /v0/topics/{topic}/records`
    (same limits and errors: `400 batch_too_large`, `record_too_large`,
    `invalid_request`). A missing `topic` is created with the default config
    (`429` with `detail.limit: "max_topics"` if that cap is reached); deleting
    the topic removes its schedules. `missed` says what happens to due times that
    passed while the server was down: `skip` them (the next run is the next due
    time in the future) or append `once` for all of them at start-up. While the
    server runs, a late or failed run (a full `discard: "reject"` topic, a
    read-only WAL) is retried with backoff, and one append covers the due times
    that passed meanwhile — never a burst.

    New → `201`; identical or changed → `200`. A change of `cron` or `every_ms`
    starts the timing over from the PUT; other changes keep it. A new schedule
    beyond `TOPICS_MAX_SCHEDULES` is `429 throttled` with
    `detail.limit: "max_schedules"`. Records with `delay_ms` (delayed jobs) need
    `topic` to be a queue already: else `409 not_a_queue`, as each run's append
    would answer. The response is the schedule with its progress, as `GET`
    returns it.

    Args:
        schedule (str):
        body (ScheduleConfig): A schedule definition (the body of `PUT /v0/schedules/{schedule}`):
            `topic`,
            `records`, and exactly one of `cron` and `every_ms` (`400 invalid_request`
            otherwise).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | SchedulePutResponse]
    """

    kwargs = _get_kwargs(
        schedule=schedule,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    schedule: str,
    *,
    client: AuthenticatedClient,
    body: ScheduleConfig,
) -> Error | SchedulePutResponse | None:
    """Create or configure a schedule (idempotent upsert)

     A schedule appends `records` to `topic` on a five-field cron expression
    (`cron`, UTC) or every `every_ms` milliseconds — the first run one interval
    after the PUT (an extension: docs/DECISIONS.md, "Schedules"; Celery beat,
    arq's and RQ's `cron`, NATS scheduled messages). Each run is an append through
    the write path (the topic's durability class applies), keyed by an
    idempotency key derived from the schedule's name and the due time, and logged
    with its due time: a due time never runs twice, even across a crash.

    `records` is validated like the body of `POST /v0/topics/{topic}/records`
    (same limits and errors: `400 batch_too_large`, `record_too_large`,
    `invalid_request`). A missing `topic` is created with the default config
    (`429` with `detail.limit: "max_topics"` if that cap is reached); deleting
    the topic removes its schedules. `missed` says what happens to due times that
    passed while the server was down: `skip` them (the next run is the next due
    time in the future) or append `once` for all of them at start-up. While the
    server runs, a late or failed run (a full `discard: "reject"` topic, a
    read-only WAL) is retried with backoff, and one append covers the due times
    that passed meanwhile — never a burst.

    New → `201`; identical or changed → `200`. A change of `cron` or `every_ms`
    starts the timing over from the PUT; other changes keep it. A new schedule
    beyond `TOPICS_MAX_SCHEDULES` is `429 throttled` with
    `detail.limit: "max_schedules"`. Records with `delay_ms` (delayed jobs) need
    `topic` to be a queue already: else `409 not_a_queue`, as each run's append
    would answer. The response is the schedule with its progress, as `GET`
    returns it.

    Args:
        schedule (str):
        body (ScheduleConfig): A schedule definition (the body of `PUT /v0/schedules/{schedule}`):
            `topic`,
            `records`, and exactly one of `cron` and `every_ms` (`400 invalid_request`
            otherwise).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | SchedulePutResponse
    """

    return (
        await asyncio_detailed(
            schedule=schedule,
            client=client,
            body=body,
        )
    ).parsed
