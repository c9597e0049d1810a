// Unit tests of the console's pure logic (server/topics_server/console/lib.js), run by
// `node --test` from tests/console/test_js_units.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  SSEParser,
  Series,
  configBody,
  configFields,
  counterRate,
  deleteBody,
  describeDelete,
  formatBytes,
  formatCount,
  formatDuration,
  formatRate,
  intervalMean,
  may,
  metricSum,
  nameAllowed,
  parsePrometheus,
  parseTime,
  planRedrive,
  redriveBody,
  scopesByOperation,
  tailApply,
  textMatches,
} from "../../server/topics_server/console/lib.js";

test("SSE: events split across chunks, CRLF, comments, multi-line data, ids", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push("retry: 2000\n\nid: a1\nevent: rec"), []);
  assert.deepEqual(p.push('ord\ndata: {"x":\ndata: 1}\n'), []);
  assert.deepEqual(p.push("\n: hb 123\n\n"), [{ event: "record", data: '{"x":\n1}', id: "a1" }]);
  assert.deepEqual(p.push("data: plain\r"), []);
  assert.deepEqual(p.push("\n\r\n"), [{ event: "message", data: "plain", id: null }]);
  assert.deepEqual(p.push("event: caught-up\ndata:no-space\n\n"), [{ event: "caught-up", data: "no-space", id: null }]);
});

test("SSE: an event without data is dropped, and fields reset after each event", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push("event: x\n\ndata: y\n\n"), [{ event: "message", data: "y", id: null }]);
});

const EXPOSITION = `# HELP topics_records_appended_total Records appended.
# TYPE topics_records_appended_total counter
topics_records_appended_total{topic_class="disk"} 10
topics_records_appended_total{topic_class="fsync"} 5
topics_bytes_live 2048
topics_http_requests_total{operation="list_topics",status="200",odd="a\\"b,c}"} 3 1700000000000
topics_throttle_cutoff -Inf
`;

test("Prometheus text: samples by name with labels, escapes, timestamps and infinities", () => {
  const m = parsePrometheus(EXPOSITION);
  assert.equal(metricSum(m, "topics_records_appended_total"), 15);
  assert.equal(metricSum(m, "topics_records_appended_total", { topic_class: "fsync" }), 5);
  assert.equal(metricSum(m, "topics_bytes_live"), 2048);
  assert.equal(metricSum(m, "absent"), 0);
  const [req] = m.get("topics_http_requests_total");
  assert.deepEqual(req.labels, { operation: "list_topics", status: "200", odd: 'a"b,c}' });
  assert.equal(req.value, 3);
  assert.equal(m.get("topics_throttle_cutoff")[0].value, -Infinity);
});

test("rates: counters, resets and histogram means", () => {
  assert.equal(counterRate(null, 10, 1), null);
  assert.equal(counterRate(10, 40, 3), 10);
  assert.equal(counterRate(40, 5, 3), null); // restarted
  assert.equal(counterRate(5, 5, 0), null);
  assert.equal(intervalMean(1, 10, 1.5, 20), 0.05);
  assert.equal(intervalMean(1, 10, 1, 10), null);
  const s = new Series(2);
  s.push(1, 1);
  s.push(2, 2);
  s.push(3, 3);
  assert.deepEqual(s.points, [
    [2, 2],
    [3, 3],
  ]);
  assert.equal(s.last(), 3);
});

test("formatting", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(1536), "1.5 KiB");
  assert.equal(formatBytes(5 * 1024 ** 3), "5.0 GiB");
  assert.equal(formatBytes(undefined), "–");
  assert.equal(formatDuration(850), "850 ms");
  assert.equal(formatDuration(12_500), "12 s");
  assert.equal(formatDuration(3 * 60_000), "3 min");
  assert.equal(formatDuration(125 * 60_000), "2 h 5 min");
  assert.equal(formatDuration(3 * 86_400_000), "3 d");
  assert.equal(formatCount(12345678), "12,345,678");
  assert.equal(formatCount(-1000), "-1,000");
  assert.equal(formatRate(0), "0");
  assert.equal(formatRate(0.25), "0.25");
  assert.equal(formatRate(1234), "1.2k");
});

test("parseTime: local date-times and epoch ms", () => {
  assert.equal(parseTime("1795797853224"), 1795797853224);
  assert.equal(parseTime("2026-01-31 12:34:56.5"), new Date(2026, 0, 31, 12, 34, 56, 500).getTime());
  assert.equal(parseTime("2026-01-31T12:00"), new Date(2026, 0, 31, 12, 0).getTime());
  assert.equal(parseTime("yesterday"), null);
});

const DOCUMENT = {
  paths: {
    "/v0/topics": { get: { operationId: "list_topics", security: [{ bearerAuth: ["read"] }] } },
    "/v0/topics/{topic}": {
      put: { operationId: "put_topic", security: [{ bearerAuth: ["admin"] }] },
      parameters: [],
    },
    "/v0/topics/{topic}/claim": { post: { operationId: "claim_jobs", security: [{ bearerAuth: ["read", "write"] }] } },
    "/v0/health": { get: { operationId: "health", security: [] } },
  },
  components: {
    schemas: {
      TopicConfig: {
        properties: {
          type: { $ref: "#/components/schemas/TopicType", description: "Topic kind." },
          ttl_ms: { type: "integer", minimum: 0, description: "TTL." },
          priority: { type: ["integer", "null"] },
          durable: { type: "boolean" },
          dead_letter: { type: ["string", "null"], description: "Queue only. Where jobs go." },
        },
      },
      TopicType: { type: "string", enum: ["log", "queue"] },
    },
  },
};

test("scopes from the served document decide what a key may do", () => {
  const scopes = scopesByOperation(DOCUMENT);
  assert.deepEqual(scopes, { list_topics: ["read"], put_topic: ["admin"], claim_jobs: ["read", "write"], health: [] });
  const dev = { auth: "dev", scopes: [], prefixes: [] };
  const reader = { auth: "keys", scopes: ["read"], prefixes: ["team."] };
  assert.equal(may(dev, scopes, "put_topic", "x"), true);
  assert.equal(may(reader, scopes, "list_topics"), true);
  assert.equal(may(reader, scopes, "put_topic", "team.a"), false);
  assert.equal(may(reader, scopes, "claim_jobs", "team.a"), false);
  assert.equal(may(reader, scopes, "list_topics", "other"), false);
  assert.equal(may(reader, scopes, "unknown_op"), false);
  assert.equal(nameAllowed({ prefixes: [] }, "anything"), true);
});

test("config form fields and the PUT body from typed values", () => {
  const fields = configFields(DOCUMENT);
  assert.deepEqual(
    fields.map((f) => [f.name, f.kind, f.queueOnly]),
    [
      ["type", "enum", false],
      ["ttl_ms", "integer", false],
      ["priority", "nullable-integer", false],
      ["durable", "boolean", false],
      ["dead_letter", "nullable-string", true],
    ],
  );
  assert.deepEqual(configBody(fields, { ttl_ms: "60000", priority: "", durable: "false", dead_letter: "q.dlq" }), {
    ttl_ms: 60000,
    priority: null,
    durable: false,
    dead_letter: "q.dlq",
  });
  // not an integer: sent as typed, so the server's validation names the field
  assert.deepEqual(configBody(fields, { ttl_ms: "ten" }), { ttl_ms: "ten" });
});

const dead = (seq, from, tag, extra = {}) => ({
  $seq: seq,
  $ts: 1,
  ...(tag === undefined ? {} : { $tag: tag }),
  data: { n: seq },
  meta: { $dead_letter_from: from, $dead_letter_deliveries: 3, $dead_letter_src_seq: seq * 10, $dead_letter_reason: "x", ...extra },
});

test("redrive body strips the dead-letter stamps and keeps tag, node and other meta", () => {
  const r = { ...dead(1, "jobs", "t", { trace: "abc" }), $node: "n1" };
  assert.deepEqual(redriveBody(r), { data: { n: 1 }, tag: "t", node: "n1", meta: { trace: "abc" } });
  assert.deepEqual(redriveBody(dead(2, "jobs")), { data: { n: 2 } });
});

test("redrive plan: all, by prefix, by tag behind a kept record, skips what cannot be deleted exactly", () => {
  const records = [dead(1, "jobs"), dead(2, "jobs", "a"), dead(3, "other", "b"), dead(4, "jobs")];
  const all = planRedrive("jobs.dlq", records);
  assert.deepEqual(
    all.steps.map((s) => [s.seq, s.target, s.remove]),
    [
      [1, "jobs", { before_seq: 2 }],
      [2, "jobs", { before_seq: 3 }],
      [3, "other", { before_seq: 4 }],
      [4, "jobs", { before_seq: 5 }],
    ],
  );
  assert.equal(all.steps[0].append.idempotency_key, "redrive:jobs.dlq:1");
  // seq 1 kept: seq 2 goes by its tag (bounded by before_seq), seq 4 (no tag) cannot go
  const some = planRedrive("jobs.dlq", records, new Set([2, 4]));
  assert.deepEqual(
    some.steps.map((s) => [s.seq, s.remove]),
    [[2, { before_seq: 3, match: ["tag", "Eq", "a"] }]],
  );
  assert.deepEqual(
    some.skipped.map((s) => s.seq),
    [4],
  );
  // a record without provenance is not a dead letter: never moved, and said so
  const plain = planRedrive("d", [{ $seq: 1, data: 1 }], null);
  assert.deepEqual(plain.steps, []);
  assert.match(plain.skipped[0].reason, /not a dead-lettered job/);
});

test("text match over data, tag, node and meta, case-insensitive", () => {
  const rs = [
    { $seq: 1, data: { msg: "Timeout" } },
    { $seq: 2, data: "ok", $tag: "timeouts" },
    { $seq: 3, data: 3, meta: { err: "none" } },
  ];
  assert.deepEqual(
    textMatches(rs, "timeout").map((r) => r.$seq),
    [1, 2],
  );
  assert.equal(textMatches(rs, "").length, 3);
});

test("delete: body and the confirmation's words", () => {
  assert.equal(deleteBody("", ""), null);
  assert.deepEqual(deleteBody("10", ""), { before_seq: 10 });
  assert.deepEqual(deleteBody("", "chat-*"), { match: ["tag", "Glob", "chat-*"] });
  assert.equal(describeDelete("t", { before_seq: 10 }), "Permanently delete from t every record with seq below 10.");
  assert.equal(
    describeDelete("t", { before_seq: 10, match: ["tag", "Eq", "a"] }),
    'Permanently delete from t every record with seq below 10 whose tag is "a".',
  );
  assert.match(describeDelete("t", { match: ["tag", "Glob", "chat-*"] }), /whose tag starts with "chat-"/);
});

test("live tail rows: records appended, tombstones as gaps, bounded", () => {
  let rows = tailApply([], { event: "record", data: { records: [{ $seq: 1 }, { $seq: 2 }] } });
  rows = tailApply(rows, {
    event: "tombstone",
    data: { gap_from: 3, gap_to: 9, reason: "cap", missed_estimate: 7 },
  });
  rows = tailApply(rows, { event: "record", data: { records: [{ $seq: 10 }] } }, 3);
  assert.deepEqual(
    rows.map((r) => (r.kind === "gap" ? `gap ${r.from}-${r.to}` : r.record.$seq)),
    [2, "gap 3-9", 10],
  );
  assert.equal(tailApply(rows, { event: "caught-up", data: {} }, 3).length, 3);
});
