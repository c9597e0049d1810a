"""Contains all the data models used in inputs/outputs"""

from .ack_request import AckRequest
from .ack_response import AckResponse
from .append_request import AppendRequest
from .append_response import AppendResponse
from .claim_request import ClaimRequest
from .claim_response import ClaimResponse
from .claimed_job import ClaimedJob
from .claimed_job_meta import ClaimedJobMeta
from .commit_request import CommitRequest
from .consumer import Consumer
from .consumer_config import ConsumerConfig
from .consumer_delete_response import ConsumerDeleteResponse
from .consumer_list import ConsumerList
from .consumer_put_response import ConsumerPutResponse
from .consumer_state import ConsumerState
from .dead_letter_request import DeadLetterRequest
from .dead_letter_response import DeadLetterResponse
from .delete_records_request import DeleteRecordsRequest
from .delete_records_response import DeleteRecordsResponse
from .diff_request import DiffRequest
from .diff_response import DiffResponse
from .discard import Discard
from .durability import Durability
from .error import Error
from .error_body import ErrorBody
from .error_body_detail import ErrorBodyDetail
from .error_code import ErrorCode
from .extend_request import ExtendRequest
from .extend_response import ExtendResponse
from .extend_response_deadlines import ExtendResponseDeadlines
from .health import Health
from .lease_info import LeaseInfo
from .lease_list import LeaseList
from .match_op import MatchOp
from .metric_family import MetricFamily
from .metric_sample import MetricSample
from .metric_sample_labels import MetricSampleLabels
from .metrics_snapshot import MetricsSnapshot
from .metrics_snapshot_metrics import MetricsSnapshotMetrics
from .nack_request import NackRequest
from .nack_response import NackResponse
from .performance import Performance
from .queue_counters import QueueCounters
from .queue_holder import QueueHolder
from .ready import Ready
from .record import Record
from .record_in import RecordIn
from .record_in_meta import RecordInMeta
from .record_meta import RecordMeta
from .resolved_topic_config import ResolvedTopicConfig
from .router import Router
from .router_config import RouterConfig
from .router_delete_response import RouterDeleteResponse
from .router_guarantee import RouterGuarantee
from .router_list import RouterList
from .router_put_response import RouterPutResponse
from .router_state import RouterState
from .router_summary import RouterSummary
from .schedule import Schedule
from .schedule_config import ScheduleConfig
from .schedule_delete_response import ScheduleDeleteResponse
from .schedule_failure import ScheduleFailure
from .schedule_list import ScheduleList
from .schedule_missed import ScheduleMissed
from .schedule_put_response import SchedulePutResponse
from .schedule_state import ScheduleState
from .schedule_summary import ScheduleSummary
from .scheduled_record import ScheduledRecord
from .scheduled_record_meta import ScheduledRecordMeta
from .tombstone import Tombstone
from .tombstone_reason import TombstoneReason
from .topic_config import TopicConfig
from .topic_delete_response import TopicDeleteResponse
from .topic_list import TopicList
from .topic_put_response import TopicPutResponse
from .topic_state import TopicState
from .topic_summary import TopicSummary
from .topic_type import TopicType
from .watch_consistency import WatchConsistency
from .watch_request import WatchRequest
from .watch_request_topics import WatchRequestTopics
from .watch_session import WatchSession
from .watch_session_topics import WatchSessionTopics
from .watch_topic_options import WatchTopicOptions
from .watch_topic_position import WatchTopicPosition
from .whoami import Whoami

__all__ = (
    "AckRequest",
    "AckResponse",
    "AppendRequest",
    "AppendResponse",
    "ClaimedJob",
    "ClaimedJobMeta",
    "ClaimRequest",
    "ClaimResponse",
    "CommitRequest",
    "Consumer",
    "ConsumerConfig",
    "ConsumerDeleteResponse",
    "ConsumerList",
    "ConsumerPutResponse",
    "ConsumerState",
    "DeadLetterRequest",
    "DeadLetterResponse",
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "DiffRequest",
    "DiffResponse",
    "Discard",
    "Durability",
    "Error",
    "ErrorBody",
    "ErrorBodyDetail",
    "ErrorCode",
    "ExtendRequest",
    "ExtendResponse",
    "ExtendResponseDeadlines",
    "Health",
    "LeaseInfo",
    "LeaseList",
    "MatchOp",
    "MetricFamily",
    "MetricSample",
    "MetricSampleLabels",
    "MetricsSnapshot",
    "MetricsSnapshotMetrics",
    "NackRequest",
    "NackResponse",
    "Performance",
    "QueueCounters",
    "QueueHolder",
    "Ready",
    "Record",
    "RecordIn",
    "RecordInMeta",
    "RecordMeta",
    "ResolvedTopicConfig",
    "Router",
    "RouterConfig",
    "RouterDeleteResponse",
    "RouterGuarantee",
    "RouterList",
    "RouterPutResponse",
    "RouterState",
    "RouterSummary",
    "Schedule",
    "ScheduleConfig",
    "ScheduleDeleteResponse",
    "ScheduledRecord",
    "ScheduledRecordMeta",
    "ScheduleFailure",
    "ScheduleList",
    "ScheduleMissed",
    "SchedulePutResponse",
    "ScheduleState",
    "ScheduleSummary",
    "Tombstone",
    "TombstoneReason",
    "TopicConfig",
    "TopicDeleteResponse",
    "TopicList",
    "TopicPutResponse",
    "TopicState",
    "TopicSummary",
    "TopicType",
    "WatchConsistency",
    "WatchRequest",
    "WatchRequestTopics",
    "WatchSession",
    "WatchSessionTopics",
    "WatchTopicOptions",
    "WatchTopicPosition",
    "Whoami",
)
