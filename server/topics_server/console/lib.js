// The console's pure logic: no DOM, no network — unit-tested with Node (tests/console/lib.test.mjs).

/** Incremental Server-Sent Events parser (the WHATWG event-stream format): feed it decoded text
 * chunks as they arrive, get back whole events `{event, data, id}`. Comment lines (`: hb ...`)
 * and `retry:` fields are consumed; a chunk may end anywhere, even inside a line or a CRLF. */
export class SSEParser {
  constructor() {
    this.buffer = "";
    this.reset();
  }

  reset() {
    this.event = "";
    this.data = [];
    this.id = null;
  }

  /** @param {string} chunk @returns {{event: string, data: string, id: string|null}[]} */
  push(chunk) {
    this.buffer += chunk;
    const out = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null) break;
      // a lone CR at the very end may be the first half of a CRLF: wait for the next chunk
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const ev = this.line(line);
      if (ev !== null) out.push(ev);
    }
    return out;
  }

  line(line) {
    if (line === "") {
      if (this.data.length === 0) {
        this.reset();
        return null;
      }
      const ev = { event: this.event || "message", data: this.data.join("\n"), id: this.id };
      this.reset();
      return ev;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
    return null;
  }
}

/** Prometheus text exposition → `Map<name, {labels: object, value: number}[]>` (comments and
 * `# HELP`/`# TYPE` lines skipped; `+Inf`, `-Inf`, `NaN` understood; a timestamp ignored). */
export function parsePrometheus(text) {
  const out = new Map();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    let name;
    let labels = {};
    let rest;
    const brace = line.indexOf("{");
    const space = line.indexOf(" ");
    if (brace >= 0 && (space < 0 || brace < space)) {
      name = line.slice(0, brace);
      const end = closingBrace(line, brace);
      labels = parseLabels(line.slice(brace + 1, end));
      rest = line.slice(end + 1).trim();
    } else {
      name = line.slice(0, space);
      rest = line.slice(space + 1).trim();
    }
    const value = parseValue(rest.split(/\s+/)[0]);
    if (!out.has(name)) out.set(name, []);
    out.get(name).push({ labels, value });
  }
  return out;
}

function closingBrace(line, start) {
  let quoted = false;
  for (let i = start + 1; i < line.length; i++) {
    const c = line[i];
    if (quoted && c === "\\") i++;
    else if (c === '"') quoted = !quoted;
    else if (c === "}" && !quoted) return i;
  }
  return line.length;
}

function parseLabels(text) {
  const labels = {};
  const re = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/g;
  let m;
  while ((m = re.exec(text)) !== null) {
    labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
  }
  return labels;
}

function parseValue(text) {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  return Number(text);
}

/** The sum of a metric's samples whose labels include every pair of `where` (0 when absent). */
export function metricSum(metrics, name, where = {}) {
  let total = 0;
  for (const sample of metrics.get(name) || []) {
    if (Object.entries(where).every(([k, v]) => sample.labels[k] === v)) total += sample.value;
  }
  return total;
}

/** Whether the exposition has the metric at all. */
export function hasMetric(metrics, name) {
  return (metrics.get(name) || []).length > 0;
}

/** A counter's rate per second between two readings; null when it cannot be told (first
 * reading, no time passed, or the counter went down: the server restarted). */
export function counterRate(previous, current, seconds) {
  if (previous === null || previous === undefined || !(seconds > 0) || current < previous) return null;
  return (current - previous) / seconds;
}

/** The mean of a histogram over an interval, from its `_sum` and `_count` at both ends; null
 * when nothing was observed in between. */
export function intervalMean(prevSum, prevCount, sum, count) {
  if (prevSum === null || prevCount === null || count <= prevCount || sum < prevSum) return null;
  return (sum - prevSum) / (count - prevCount);
}

/** A bounded series of `[time, value]` points for a chart (oldest dropped first). */
export class Series {
  constructor(capacity = 60) {
    this.capacity = capacity;
    this.points = [];
  }

  push(t, value) {
    this.points.push([t, value]);
    if (this.points.length > this.capacity) this.points.shift();
  }

  last() {
    const p = this.points[this.points.length - 1];
    return p === undefined ? null : p[1];
  }
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** `1536` → `"1.5 KiB"`. */
export function formatBytes(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${BYTE_UNITS[unit]}`;
}

/** A duration in milliseconds for people: `"850 ms"`, `"12 s"`, `"3 min"`, `"2 h 5 min"`, `"4 d"`. */
export function formatDuration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 24) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} d`;
}

/** `12345678` → `"12,345,678"` (thousands grouped, no locale surprises). */
export function formatCount(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  const sign = n < 0 ? "-" : "";
  return sign + String(Math.trunc(Math.abs(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** A rate for a chart label: `"0"`, `"0.25"`, `"12.5"`, `"1.2k"`. */
export function formatRate(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  if (x >= 1e6) return `${(x / 1e6).toFixed(1)}M`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)}k`;
  if (x >= 10 || x === 0) return x.toFixed(0);
  return x.toFixed(2);
}

/** An epoch-ms timestamp as local ISO-like text, `YYYY-MM-DD HH:MM:SS.mmm`. */
export function formatTime(ms) {
  if (ms === null || ms === undefined) return "–";
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`
  );
}

/** Parses a local date-time typed by a person (`2026-01-31 12:00[:00[.000]]`, `T` allowed) or an
 * epoch in ms into epoch ms; null when it is neither. */
export function parseTime(text) {
  const t = text.trim();
  if (/^\d{10,}$/.test(t)) return Number(t);
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/.exec(t);
  if (m === null) return null;
  const [, y, mo, d, h = "0", mi = "0", s = "0", frac = "0"] = m;
  const date = new Date(+y, +mo - 1, +d, +h, +mi, +s, +frac.padEnd(3, "0"));
  return Number.isNaN(date.getTime()) ? null : date.getTime();
}

/** The scopes each operation needs, from the served OpenAPI document: `{operationId: [scopes]}`
 * (an operation with `security: []` needs none). */
export function scopesByOperation(document) {
  const out = {};
  for (const item of Object.values(document.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "put", "post", "delete", "patch"].includes(method) || !op.operationId) continue;
      const security = op.security || document.security || [];
      const bearer = security.find((s) => s.bearerAuth !== undefined);
      out[op.operationId] = bearer ? bearer.bearerAuth : [];
    }
  }
  return out;
}

/** Whether a name is within a key's prefixes (none: any name). */
export function nameAllowed(whoami, name) {
  const prefixes = whoami.prefixes || [];
  return prefixes.length === 0 || prefixes.some((p) => name.startsWith(p));
}

/** Whether the key of `whoami` may call `operationId` (on `name`, when given): dev mode may do
 * everything; otherwise every scope the operation needs, and the name within its prefixes. */
export function may(whoami, scopes, operationId, name = null) {
  if (whoami.auth === "dev") return true;
  const needed = scopes[operationId];
  if (needed === undefined) return false;
  const held = new Set(whoami.scopes || []);
  if (!needed.every((s) => held.has(s))) return false;
  return name === null || nameAllowed(whoami, name);
}

export const DEAD_LETTER_KEYS = [
  "$dead_letter_from",
  "$dead_letter_deliveries",
  "$dead_letter_src_seq",
  "$dead_letter_reason",
];

/** A dead-lettered record as it is appended back to its queue: data, tag, node and meta, minus
 * the dead-letter stamps (as the SDK's `redrive`). */
export function redriveBody(record) {
  const body = { data: record.data };
  if (record.$tag !== undefined && record.$tag !== null) body.tag = record.$tag;
  if (record.$node !== undefined && record.$node !== null) body.node = record.$node;
  if (record.meta) {
    const meta = {};
    for (const [k, v] of Object.entries(record.meta)) if (!DEAD_LETTER_KEYS.includes(k)) meta[k] = v;
    if (Object.keys(meta).length > 0) body.meta = meta;
  }
  return body;
}

/** The steps of a redrive of the dead-letter topic `dlq`, whose records (oldest first, with
 * meta and tags) are `records`, moving those whose seq is in `chosen` (null: all), exactly as the
 * SDK's `redrive` does: each moved record is appended to its source queue under the idempotency
 * key `redrive:<dlq>:<seq>`, then deleted — by prefix (`before_seq`) while every older record has
 * been moved, else by its tag with `before_seq` when no older record left in place shares it.
 * A record neither allows (no tag, behind a record left in place) is skipped with a reason.
 * Returns `{steps: [{seq, target, append, remove}], skipped: [{seq, reason}]}`. */
export function planRedrive(dlq, records, chosen = null) {
  const steps = [];
  const skipped = [];
  const keptTags = new Set();
  let allMovedBelow = true;
  for (const record of records) {
    const seq = record.$seq;
    const target = record.meta ? record.meta.$dead_letter_from : undefined;
    const wanted = chosen === null || chosen.has(seq);
    const tag = record.$tag === undefined ? null : record.$tag;
    const exact = allMovedBelow || (tag !== null && !keptTags.has(tag));
    if (!(wanted && typeof target === "string" && exact)) {
      if (wanted) {
        const reason =
          typeof target !== "string"
            ? "no $dead_letter_from: not a dead-lettered job"
            : "an older record left in place shares its tag (or it has none): a log deletes a prefix or by tag";
        skipped.push({ seq, reason });
      }
      allMovedBelow = false;
      keptTags.add(tag);
      continue;
    }
    const remove = { before_seq: seq + 1 };
    if (!allMovedBelow) remove.match = ["tag", "Eq", tag];
    steps.push({
      seq,
      target,
      append: { records: [redriveBody(record)], idempotency_key: `redrive:${dlq}:${seq}` },
      remove,
    });
  }
  return { steps, skipped };
}

/** Records whose data, tag, node or meta contain `needle` (case-insensitive) as JSON text. */
export function textMatches(records, needle) {
  const n = needle.toLowerCase();
  if (n === "") return records.slice();
  return records.filter((r) =>
    [r.data, r.$tag, r.$node, r.meta]
      .filter((v) => v !== undefined && v !== null)
      .some((v) => (typeof v === "string" ? v : JSON.stringify(v)).toLowerCase().includes(n)),
  );
}

/** What a delete-records body will remove, in words for the confirmation. */
export function describeDelete(topic, body) {
  const parts = [];
  if (body.before_seq !== undefined) parts.push(`every record with seq below ${body.before_seq}`);
  if (body.match !== undefined) {
    const [, op, value] = body.match;
    parts.push(op === "Glob" ? `whose tag starts with "${value.slice(0, -1)}"` : `whose tag is "${value}"`);
  }
  if (parts.length === 2) return `Permanently delete from ${topic} ${parts[0]} ${parts[1]}.`;
  if (body.before_seq !== undefined) return `Permanently delete from ${topic} ${parts[0]}.`;
  return `Permanently delete from ${topic} every record ${parts[0]} (up to the head at the time of the call).`;
}

/** The delete-records body for a seq bound and/or a tag (`"x*"`: prefix); null when neither. */
export function deleteBody(beforeSeq, tag) {
  const body = {};
  if (beforeSeq !== null && beforeSeq !== undefined && beforeSeq !== "") body.before_seq = Number(beforeSeq);
  if (tag) body.match = tag.endsWith("*") ? ["tag", "Glob", tag] : ["tag", "Eq", tag];
  return Object.keys(body).length === 0 ? null : body;
}

/** The live tail's rows after a watch frame: a `record` frame's records appended (a jump in
 * seq is not a gap — deleted records are silent), a `tombstone` frame as one gap row;
 * the newest `capacity` rows kept. */
export function tailApply(rows, frame, capacity = 500) {
  const next = rows.slice();
  if (frame.event === "record") {
    for (const r of frame.data.records) next.push({ kind: "record", record: r });
  } else if (frame.event === "tombstone") {
    const t = frame.data;
    next.push({ kind: "gap", from: t.gap_from, to: t.gap_to, reason: t.reason, missed: t.missed_estimate });
  } else if (frame.event === "topic-deleted") {
    next.push({ kind: "deleted" });
  }
  return next.length > capacity ? next.slice(next.length - capacity) : next;
}

/** The config fields a topic's form shows, from the served document's `TopicConfig` schema:
 * `[{name, kind: "enum"|"boolean"|"integer"|"nullable-integer"|"nullable-string", options,
 * description, queueOnly}]`. */
export function configFields(document) {
  const schemas = document.components.schemas;
  const resolve = (s) => (s && s.$ref ? schemas[s.$ref.split("/").pop()] : s);
  const out = [];
  for (const [name, raw] of Object.entries(resolve(schemas.TopicConfig).properties)) {
    const s = resolve(raw);
    const description = (raw.description || s.description || "").trim();
    const types = Array.isArray(s.type) ? s.type : [s.type];
    let kind;
    let options = null;
    if (s.enum) {
      kind = "enum";
      options = s.enum;
    } else if (types.includes("boolean")) kind = "boolean";
    else if (types.includes("integer")) kind = types.includes("null") ? "nullable-integer" : "integer";
    else kind = "nullable-string";
    out.push({ name, kind, options, description, queueOnly: description.startsWith("Queue only") });
  }
  return out;
}

/** The PUT body from a config form's string values (an empty nullable field is `null`). */
export function configBody(fields, values) {
  const body = {};
  for (const f of fields) {
    const v = values[f.name];
    if (v === undefined) continue;
    if (f.kind === "boolean") body[f.name] = v === true || v === "true";
    else if (f.kind === "integer") body[f.name] = v === "" ? v : numberOrText(v);
    else if (f.kind === "nullable-integer") body[f.name] = v === "" ? null : numberOrText(v);
    else if (f.kind === "nullable-string") body[f.name] = v === "" ? null : v;
    else body[f.name] = v;
  }
  return body;
}

function numberOrText(v) {
  // a value that is not an integer is sent as typed, so the server's validation names it
  return /^-?\d+$/.test(String(v).trim()) ? Number(v) : v;
}
