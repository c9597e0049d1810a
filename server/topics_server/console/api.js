// The console's /v0 client: every call the page makes goes through here, with the operator's key
// (kept in sessionStorage, sent as `Authorization: Bearer`, never in a URL).
import { SSEParser } from "./lib.js";

const KEY = "topics.console.key";

export function storedKey() {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

/** An answer that is not 2xx: the contract's envelope `{error: {code, message, detail}}`. */
export class ApiError extends Error {
  constructor(status, envelope) {
    const error = (envelope && envelope.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || String(status);
    this.detail = error.detail || {};
  }
}

function headers(json) {
  const h = { Accept: "application/json" };
  const key = storedKey();
  if (key) h.Authorization = `Bearer ${key}`;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

/** `call("GET", "/v0/topics", {query: {prefix: "a"}})` → the parsed JSON body; throws
 * {@link ApiError} on a non-2xx answer. */
export async function call(method, path, { body, query, signal, text = false, extraHeaders } = {}) {
  let url = path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    if (s) url += `?${s}`;
  }
  const init = { method, headers: { ...headers(body !== undefined), ...(extraHeaders || {}) }, signal };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(url, init);
  if (text && response.ok) return response.text();
  let parsed = null;
  const raw = await response.text();
  try {
    parsed = raw ? JSON.parse(raw) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

export const enc = encodeURIComponent;

const HEARTBEAT_MS = 5000;
/** How long a live stream may stay silent (no frame, no heartbeat) before it is reopened. */
const LIVENESS_MS = 3 * HEARTBEAT_MS;

/** Follows one topic live over a watch session (`POST /v0/watch`, then `GET /v0/watch/{wid}`
 * read with fetch() and a ReadableStream, so the key travels in the Authorization header).
 * `onFrame({event, data})` gets each record / tombstone / caught-up / topic-deleted / error
 * frame. Returns `{stop()}`. After a dropped stream it reconnects with the last event id as
 * `Last-Event-ID` (which also rewinds a new session, made when the old wid answers 404 after a
 * server restart, to where the page was). A stream silent for {@link LIVENESS_MS} (the server
 * sends a heartbeat every 5 s) is taken for dead — a half-open connection, a frozen server —
 * and reopened. */
export function follow(topic, options, onFrame, onState) {
  const controller = new AbortController();
  let stopped = false;
  let cursor = null;
  let wid = null;
  const run = async () => {
    while (!stopped) {
      // one connection: aborted by stop(), or by the watchdog when the stream goes silent
      const connection = new AbortController();
      const abort = () => connection.abort();
      controller.signal.addEventListener("abort", abort);
      let watchdog = null;
      const arm = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(abort, LIVENESS_MS);
      };
      try {
        arm();
        if (wid === null) {
          const created = await call("POST", "/v0/watch", {
            body: { topics: { [topic]: options }, include_tags: true, include_meta: true, heartbeat_ms: HEARTBEAT_MS },
            signal: connection.signal,
          });
          wid = created.wid;
        }
        const h = headers(false);
        h.Accept = "text/event-stream";
        if (cursor !== null) h["Last-Event-ID"] = cursor;
        const response = await fetch(`/v0/watch/${enc(wid)}`, { headers: h, signal: connection.signal });
        if (!response.ok) {
          if (response.status === 404 || response.status === 410) wid = null;
          throw new Error(`watch stream: HTTP ${response.status}`);
        }
        onState("live");
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        const parser = new SSEParser();
        for (;;) {
          arm();
          const { value, done } = await reader.read();
          if (done) break;
          for (const ev of parser.push(value)) {
            if (ev.id !== null) cursor = ev.id;
            let data = null;
            try {
              data = JSON.parse(ev.data);
            } catch {
              continue;
            }
            if (ev.event === "error" && (data.code === 410 || data.code === 409)) wid = null;
            onFrame({ event: ev.event, data });
          }
        }
      } catch (err) {
        if (stopped) return;
        onState(`reconnecting (${connection.signal.aborted ? "no heartbeat" : err.message})`);
      } finally {
        clearTimeout(watchdog);
        controller.signal.removeEventListener("abort", abort);
      }
      if (!stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  };
  run();
  return {
    stop() {
      stopped = true;
      controller.abort();
    },
  };
}
