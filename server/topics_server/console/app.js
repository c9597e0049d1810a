// The console's pages and router (hash routes: #/topics, #/topic/<name>, #/routers, #/server).
// Every read and write is a public /v0 operation; what the key may do comes from
// GET /v0/whoami and the scopes each operation declares in the served contract.
import { ApiError, call, enc, follow, storedKey, storeKey } from "./api.js";
import { sparkline } from "./charts.js";
import {
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
  formatTime,
  hasMetric,
  intervalMean,
  may,
  metricSum,
  parsePrometheus,
  parseTime,
  planRedrive,
  scopesByOperation,
  tailApply,
  textMatches,
} from "./lib.js";
import { confirmDialog, field, fill, h, json, refill, section, setStatus, stat, status, table } from "./views.js";

const PAGE_SIZE = 25;
const SEARCH_WINDOW = 1000;
const QUEUE_POLL_MS = 1000;
const METRICS_POLL_MS = 3000;
/** The live tail keeps (and shows) this many newest rows, paused or not: bounded memory. */
const TAIL_ROWS = 500;

// `shown` counts the pages shown: a page's late callback checks it is still the one on screen
const state = { whoami: null, scopes: {}, fields: [], dispose: [], shown: 0 };
const main = () => document.getElementById("main");

function can(operationId, name = null) {
  return may(state.whoami, state.scopes, operationId, name);
}

/** Runs `fn` now and every `ms` until the page changes. A failed run is shown on `note` (when
 * given) in the envelope's words, and cleared by the next run that succeeds; a 401 signs out. */
function every(ms, fn, note = null) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    try {
      await fn();
      if (note && note.dataset.polling) {
        delete note.dataset.polling;
        setStatus(note, "");
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return signedOut();
      if (note && !stopped) {
        setStatus(note, errorText(err), "error");
        note.dataset.polling = "failed"; // cleared by the next good run, or any other status
      }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  tick();
  state.dispose.push(() => {
    stopped = true;
    clearTimeout(timer);
  });
}

function errorText(err) {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  return String(err && err.message ? err.message : err);
}

// -- boot and auth -----------------------------------------------------------------------------

async function boot() {
  const document_ = await call("GET", "/v0/openapi.json");
  state.scopes = scopesByOperation(document_);
  state.fields = configFields(document_);
  await identify();
}

async function identify() {
  try {
    state.whoami = await call("GET", "/v0/whoami");
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return signedOut(storedKey() ? "That key was refused." : null);
    if (err instanceof ApiError && err.status === 503) return recovering(err);
    throw err;
  }
  renderIdentity();
  // while the log replays, data operations answer 503: show the progress until ready
  const ready = await call("GET", "/v0/ready").catch((err) => err);
  if (ready instanceof ApiError && ready.status === 503) return recovering(ready);
  route();
}

/** The server is still replaying its log (or shutting down): say how far it is, and try again. */
function recovering(err) {
  const progress = err.detail.replay_progress;
  fill(
    main(),
    h("h1", {}, "The server is starting"),
    h(
      "p",
      { class: "status warn", role: "status" },
      progress !== undefined ? `Recovering: ${Math.round(progress * 100)}% of the log replayed.` : `${err.code}: ${err.message}`,
    ),
  );
  setTimeout(() => identify().catch(() => recovering(err)), 1000);
}

function signedOut(message = null) {
  storeKey(null);
  state.whoami = null;
  renderIdentity();
  stopPage();
  const input = h("input", { type: "password", name: "key", autocomplete: "off", required: true });
  const note = status(message ? "error" : "info");
  if (message) setStatus(note, message, "error");
  const form = h(
    "form",
    {
      class: "login",
      onsubmit: (ev) => {
        ev.preventDefault();
        storeKey(input.value.trim());
        identify().catch((err) => setStatus(note, errorText(err), "error"));
      },
    },
    h("h1", {}, "Sign in"),
    h(
      "p",
      {},
      "This server has API keys configured. Enter a key: it is kept in this tab only (sessionStorage) and sent as the Authorization header.",
    ),
    field("API key", input),
    h("button", { type: "submit" }, "Sign in"),
    note,
  );
  fill(main(), form);
  input.focus();
}

function renderIdentity() {
  const el = document.getElementById("identity");
  const w = state.whoami;
  if (w === null) return fill(el);
  if (w.auth === "dev") {
    return fill(el, h("span", { class: "badge warn", title: "No API keys are configured" }, "dev mode: no keys, full access"));
  }
  const prefixes = w.prefixes.length ? w.prefixes.join(" | ") : "any name";
  fill(
    el,
    h("span", { class: "badge" }, `${w.key}: ${w.scopes.join(", ") || "no scopes"}`),
    h("span", { class: "badge muted" }, `names: ${prefixes}`),
    h("button", { type: "button", class: "link", onclick: () => signedOut() }, "Sign out"),
  );
}

// -- routing -----------------------------------------------------------------------------------

function stopPage() {
  state.shown++;
  for (const fn of state.dispose.splice(0)) fn();
}

/** A path segment of the hash decoded; as typed when it is no valid escape (`%E0`), so a
 * mistyped URL shows the API's answer for that name instead of a dead page. */
function decodePart(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function route() {
  if (state.whoami === null) return;
  stopPage();
  const hash = location.hash.replace(/^#/, "") || "/topics";
  const [path, queryText] = hash.split("?");
  const query = new URLSearchParams(queryText || "");
  const parts = path.split("/").filter(Boolean).map(decodePart);
  for (const a of document.querySelectorAll("nav a")) {
    a.toggleAttribute("aria-current", a.getAttribute("href") === `#/${parts[0] === "topic" ? "topics" : parts[0]}`);
  }
  const view =
    parts[0] === "topic" && parts[1]
      ? topicPage(parts[1])
      : parts[0] === "routers"
        ? routersPage()
        : parts[0] === "server"
          ? serverPage()
          : topicsPage(query);
  fill(main(), view);
  const heading = main().querySelector("h1");
  if (heading) {
    heading.tabIndex = -1;
    document.title = `${heading.textContent} · topics console`;
  }
}

// -- topics list -------------------------------------------------------------------------------

function topicsPage(query) {
  const prefix = query.get("prefix") || "";
  const cursors = [null];
  const input = h("input", { type: "search", name: "prefix", value: prefix, placeholder: "orders." });
  const body = h("div", { class: "list-body" });
  const note = status();
  const pager = h("div", { class: "pager" });
  const known = new Map();
  let page = 0;

  const load = async () => {
    let answer;
    try {
      answer = await call("GET", "/v0/topics", {
        query: { prefix: input.value, page_size: PAGE_SIZE, cursor: cursors[page] },
      });
    } catch (err) {
      setStatus(note, errorText(err), "error");
      return;
    }
    setStatus(note, "");
    cursors[page + 1] = answer.next_cursor || null;
    // the last known details (kept between refreshes, so a refresh does not blink)
    const rows = answer.topics.map((t) => ({ lag: null, last_write_ts: undefined, ...known.get(t.topic), ...t }));
    const render = () =>
      refill(
        body,
        table(
          "Topics",
          [
            ["Topic", (t) => h("a", { href: `#/topic/${enc(t.topic)}` }, t.topic)],
            ["Type", (t) => h("span", { class: `badge ${t.type === "queue" ? "queue" : "muted"}` }, t.type)],
            ["Durability", (t) => t.durability],
            ["Count", (t) => formatCount(t.count)],
            ["Bytes", (t) => formatBytes(t.bytes)],
            ["Head", (t) => formatCount(t.head_seq)],
            ["Earliest", (t) => formatCount(t.earliest_seq)],
            ["Last write", (t) => lastWrite(t.last_write_ts)],
            ["Consumer lag", (t) => (t.lag === null ? "–" : formatCount(t.lag))],
          ],
          rows,
          input.value ? `No topic starts with "${input.value}".` : "No topics yet.",
        ),
      );
    render();
    refill(
      pager,
      h("button", { type: "button", class: "secondary", disabled: page === 0, onclick: () => turn(-1) }, "← Previous"),
      h("span", {}, `page ${page + 1}`),
      h("button", { type: "button", class: "secondary", disabled: !answer.next_cursor, onclick: () => turn(1) }, "Next →"),
    );
    // the details the list does not carry: last write (GET topic), consumer lag (consumers)
    await Promise.all(
      rows.map(async (t) => {
        const [detail, consumers] = await Promise.all([
          call("GET", `/v0/topics/${enc(t.topic)}`).catch(() => null),
          call("GET", `/v0/topics/${enc(t.topic)}/consumers`).catch(() => null),
        ]);
        if (detail) t.last_write_ts = detail.last_write_ts;
        t.lag = consumers && consumers.consumers.length ? Math.max(...consumers.consumers.map((c) => c.lag)) : null;
        known.set(t.topic, { last_write_ts: t.last_write_ts, lag: t.lag });
      }),
    );
    render();
  };
  const turn = (delta) => {
    page += delta;
    load();
  };
  let debounce = null;
  input.addEventListener("input", () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      page = 0;
      cursors.length = 1;
      history.replaceState(null, "", input.value ? `#/topics?prefix=${enc(input.value)}` : "#/topics");
      load();
    }, 200);
  });
  every(5000, load);
  return h(
    "div",
    { class: "page" },
    h("h1", {}, "Topics"),
    h(
      "form",
      { class: "toolbar", role: "search", onsubmit: (ev) => ev.preventDefault() },
      field("Name prefix", input, "Queues are marked queue; consumer lag is the largest of the topic's named consumers."),
    ),
    note,
    body,
    pager,
  );
}

function lastWrite(ts) {
  if (ts === undefined) return "…";
  if (ts === null) return "never";
  return h("span", { title: formatTime(ts) }, `${formatDuration(Date.now() - ts)} ago`);
}

// -- one topic ---------------------------------------------------------------------------------

function topicPage(name) {
  const root = h("div", { class: "page" }, h("h1", {}, name), h("p", { class: "crumbs" }, h("a", { href: "#/topics" }, "← Topics")));
  const stats = h("dl", { class: "stats" });
  const note = status();
  root.append(stats, note);
  const shown = state.shown;
  call("GET", `/v0/topics/${enc(name)}`)
    .then((topic) => {
      // left before the topic came: its panels (a live tail, pollers) would outlive the page
      if (shown !== state.shown) return;
      fill(stats, ...topicStats(topic));
      root.querySelector("h1").append(" ", h("span", { class: `badge ${topic.type === "queue" ? "queue" : "muted"}` }, topic.type));
      if (topic.type === "queue") root.append(queuePanel(name, topic));
      if (topic.config.dead_letter) root.append(deadLetterPanel(topic.config.dead_letter, name));
      else if (topic.type === "log") root.append(deadLetterPanel(name, null));
      root.append(tailPanel(name), browsePanel(name), consumersPanel(name), configPanel(name, topic));
      if (can("delete_records", name)) root.append(deletePanel(name));
      every(3000, async () => refill(stats, ...topicStats(await call("GET", `/v0/topics/${enc(name)}`))), note);
    })
    .catch((err) => setStatus(note, errorText(err), "error"));
  return root;
}

function topicStats(t) {
  return [
    stat("Records", formatCount(t.count)),
    stat("Bytes", formatBytes(t.bytes)),
    stat("Earliest seq", formatCount(t.earliest_seq)),
    stat("Head seq", formatCount(t.head_seq)),
    stat("Durability", t.config.durability),
    stat("Last write", t.last_write_ts ? `${formatDuration(Date.now() - t.last_write_ts)} ago` : "never"),
    stat("Priority", String(t.effective_priority)),
  ];
}

// -- queue -------------------------------------------------------------------------------------

function queuePanel(name, topic) {
  const counters = h("dl", { class: "stats", id: "queue-counters" });
  const warning = h("div", { class: "warning-slot" });
  const leases = h("div");
  const note = status();
  const show = (t) => {
    const q = t.queue;
    refill(
      counters,
      stat("Ready", formatCount(q.ready), "ready"),
      stat("In flight", formatCount(q.in_flight), "in_flight"),
      stat("Delayed", formatCount(q.delayed), "delayed"),
      stat("Dead-lettered", formatCount(q.dead_lettered), "dead_lettered"),
      stat("Oldest ready", q.ready ? formatDuration(q.oldest_ready_age_ms) : "–", "oldest_ready"),
    );
    refill(
      warning,
      q.ready > 0 && q.in_flight === 0 && q.holders.length === 0
        ? h(
            "p",
            { class: "status warn", role: "alert" },
            `No consumer holds leases and ${formatCount(q.ready)} job${q.ready === 1 ? " is" : "s are"} waiting: is any worker running?`,
          )
        : null,
    );
  };
  show(topic);
  every(QUEUE_POLL_MS, async () => {
    const [t, l] = await Promise.all([
      call("GET", `/v0/topics/${enc(name)}`),
      call("GET", `/v0/topics/${enc(name)}/leases`, { query: { page_size: 200 } }),
    ]);
    show(t);
    const byNode = new Map();
    for (const lease of l.leases) {
      if (!byNode.has(lease.node)) byNode.set(lease.node, []);
      byNode.get(lease.node).push(lease);
    }
    refill(
      leases,
      table(
        "Consumers holding leases",
        [
          ["Node", ([node]) => node],
          ["Jobs held", ([, ls]) => formatCount(ls.length)],
          ["Seqs", ([, ls]) => ls.map((x) => x.seq).join(", ")],
          ["Next deadline", ([, ls]) => formatDuration(Math.min(...ls.map((x) => x.deadline)) - Date.now()) + " left"],
          ["Most deliveries", ([, ls]) => String(Math.max(...ls.map((x) => x.deliveries)))],
        ],
        [...byNode.entries()],
        "No consumer holds a lease now.",
      ),
    );
  }, note);
  const purge = async () => {
    const t = await call("GET", `/v0/topics/${enc(name)}`);
    const body = { before_seq: t.next_seq };
    const ok = await confirmDialog(
      `Purge ${name}?`,
      `${describeDelete(name, body)} That is all ${formatCount(t.count)} jobs (ready, delayed and in flight); workers holding leases will fail to ack them.`,
      "Purge",
    );
    if (!ok) return;
    try {
      const r = await call("POST", `/v0/topics/${enc(name)}/delete`, { body });
      setStatus(note, `Purged: ${formatCount(r.deleted)} jobs deleted.`, "ok");
    } catch (err) {
      setStatus(note, errorText(err), "error");
    }
  };
  return section(
    "Queue",
    counters,
    warning,
    h("h3", {}, "Consumers (nodes) and their leases"),
    leases,
    can("delete_records", name) ? h("div", { class: "actions" }, h("button", { type: "button", class: "danger", onclick: purge }, "Purge queue…")) : null,
    note,
  );
}

// -- dead letters ------------------------------------------------------------------------------

function deadLetterPanel(dlq, queue) {
  const body = h("div");
  const note = status();
  const selected = new Set();
  let records = [];
  const wrap = section(queue ? `Dead letters (${dlq})` : "Dead letters");
  wrap.append(
    queue ? h("p", {}, "Jobs of this queue that ran out of deliveries are in ", h("a", { href: `#/topic/${enc(dlq)}` }, dlq), ".") : null,
    body,
    note,
  );
  const writable = can("append_records") && can("delete_records", dlq);
  const readWindow = () =>
    call("POST", `/v0/topics/${enc(dlq)}/diff`, { body: { from_seq: 0, limit: 200, include_meta: true, include_tags: true } });
  const load = async () => {
    let answer;
    try {
      if (!queue && !(await startsWithDeadLetter(dlq))) {
        wrap.hidden = true;
        return;
      }
      answer = await readWindow();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        fill(body, h("p", { class: "empty" }, "No job has been dead-lettered yet."));
        return;
      }
      throw err;
    }
    records = answer.records;
    const dead = records.filter((r) => r.meta && r.meta.$dead_letter_from);
    if (!queue && dead.length === 0) {
      wrap.hidden = true;
      return;
    }
    wrap.hidden = false;
    for (const seq of [...selected]) if (!dead.some((r) => r.$seq === seq)) selected.delete(seq);
    const check = (r) =>
      h("input", {
        type: "checkbox",
        "aria-label": `select dead letter ${r.$seq}`,
        checked: selected.has(r.$seq),
        onchange: (ev) => (ev.target.checked ? selected.add(r.$seq) : selected.delete(r.$seq)),
      });
    refill(
      body,
      table(
        "Dead-lettered jobs",
        [
          ...(writable ? [["Select", check]] : []),
          ["Seq", (r) => String(r.$seq)],
          ["From", (r) => r.meta.$dead_letter_from],
          ["Source seq", (r) => String(r.meta.$dead_letter_src_seq ?? "–")],
          ["Deliveries", (r) => String(r.meta.$dead_letter_deliveries ?? "–")],
          ["Reason", (r) => r.meta.$dead_letter_reason ?? "–"],
          ["Dead since", (r) => formatTime(r.$ts)],
          ["Data", (r) => json(r.data)],
          ...(writable
            ? [["", (r) => h("button", { type: "button", class: "small", onclick: () => redrive(new Set([r.$seq])) }, `Redrive ${r.$seq}`)]]
            : []),
        ],
        dead,
        "No dead-lettered jobs.",
      ),
      writable && dead.length
        ? h(
            "div",
            { class: "actions" },
            h("button", { type: "button", onclick: () => redrive(new Set(selected)) }, "Redrive selected"),
            h("button", { type: "button", class: "secondary", onclick: () => redrive(null) }, "Redrive all"),
          )
        : null,
      answer.caught_up ? null : h("p", { class: "hint" }, "Showing the oldest 200; redrive moves the oldest first."),
    );
  };
  const redrive = async (chosen) => {
    if (chosen !== null && chosen.size === 0) return setStatus(note, "Select at least one job first.", "warn");
    const plan = planRedrive(dlq, records, chosen);
    if (plan.steps.length === 0) {
      return setStatus(note, plan.skipped.map((s) => `seq ${s.seq}: ${s.reason}`).join("; ") || "Nothing to redrive.", "warn");
    }
    const targets = [...new Set(plan.steps.map((s) => s.target))].join(", ");
    const ok = await confirmDialog(
      "Redrive dead letters?",
      `Append ${plan.steps.length} job${plan.steps.length === 1 ? "" : "s"} (seq ${plan.steps.map((s) => s.seq).join(", ")}) back to ${targets} as new jobs, then delete ${plan.steps.length === 1 ? "it" : "them"} from ${dlq}.` +
        (plan.skipped.length ? ` ${plan.skipped.length} selected cannot be deleted exactly and stay.` : ""),
      "Redrive",
    );
    if (!ok) return;
    // the dialog may have stood open while another operator redrove or deleted some of these:
    // plan again over the topic as it is now, for the confirmed seqs only
    let now;
    try {
      now = planRedrive(dlq, (await readWindow()).records, new Set(plan.steps.map((s) => s.seq)));
    } catch (err) {
      return setStatus(note, errorText(err), "error");
    }
    const planned = new Set(now.steps.map((s) => s.seq));
    const gone = plan.steps.filter((s) => !planned.has(s.seq) && !now.skipped.some((k) => k.seq === s.seq));
    const left =
      (gone.length ? ` Seq ${gone.map((s) => s.seq).join(", ")} left ${dlq} meanwhile (redriven or deleted by someone else): not appended.` : "") +
      (now.skipped.length ? ` ${now.skipped.map((k) => `seq ${k.seq}: ${k.reason}`).join("; ")}.` : "");
    let moved = 0;
    try {
      for (const step of now.steps) {
        await call("POST", `/v0/topics/${enc(step.target)}`, { body: step.append });
        await call("POST", `/v0/topics/${enc(dlq)}/delete`, { body: step.remove });
        moved++;
      }
      setStatus(note, `Redriven: ${moved} job${moved === 1 ? "" : "s"}.${left}`, left ? "warn" : "ok");
    } catch (err) {
      setStatus(note, `Redrove ${moved}, then: ${errorText(err)}`, "error");
    }
    selected.clear();
    await load();
  };
  every(3000, load, note);
  return wrap;
}

/** Whether a plain log is a dead-letter topic: its earliest record carries `$dead_letter_from`
 * (one record read, so a big log's page does not fetch a window of records every few seconds). */
async function startsWithDeadLetter(topic) {
  const probe = await call("POST", `/v0/topics/${enc(topic)}/diff`, { body: { from_seq: 0, limit: 1, include_meta: true } });
  const first = probe.records[0];
  return Boolean(first && first.meta && first.meta.$dead_letter_from);
}

// -- live tail ---------------------------------------------------------------------------------

function tailPanel(name) {
  let rows = [];
  let paused = false;
  let unseen = 0;
  let watch = null;
  const list = h("ol", { class: "tail", "aria-label": "Live records", "aria-live": "off" });
  const note = status();
  const pauseButton = h("button", { type: "button", class: "secondary", disabled: true }, "Pause");
  const startButton = h("button", { type: "button" }, "Start live tail");
  const render = () => {
    fill(
      list,
      rows
        .slice()
        .reverse()
        .map((row) =>
          row.kind === "record"
            ? h("li", { class: "rec", "data-seq": row.record.$seq }, recordLine(row.record))
            : row.kind === "gap"
              ? h("li", { class: "gap" }, `gap: seq ${row.from}–${row.to} lost (${row.reason}, about ${row.missed} records)`)
              : h("li", { class: "gap" }, "the topic was deleted"),
        ),
    );
  };
  const start = () => {
    startButton.hidden = true;
    pauseButton.disabled = false;
    setStatus(note, "connecting…");
    watch = follow(
      name,
      { tail: true },
      (frame) => {
        if (frame.event === "caught-up") return setStatus(note, `live: waiting for records after seq ${frame.data.head_seq}`, "ok");
        if (frame.event === "error") return setStatus(note, `stream: ${frame.data.error || frame.data.code}`, "warn");
        rows = tailApply(rows, frame, TAIL_ROWS);
        if (frame.event === "record") setStatus(note, `live: head seq ${frame.data.head_seq}`, "ok");
        if (paused) {
          unseen += frame.event === "record" ? frame.data.records.length : frame.event === "tombstone" || frame.event === "topic-deleted" ? 1 : 0;
          // the list is bounded while paused too: say when Resume cannot show all that came
          const kept = unseen > TAIL_ROWS ? `; the newest ${formatCount(TAIL_ROWS)} kept` : "";
          pauseButton.textContent = `Resume (${formatCount(unseen)} new${kept})`;
        } else render();
      },
      (s) => setStatus(note, s === "live" ? "live" : s, s === "live" ? "ok" : "warn"),
    );
  };
  startButton.addEventListener("click", start);
  pauseButton.addEventListener("click", () => {
    paused = !paused;
    unseen = 0;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    pauseButton.setAttribute("aria-pressed", String(paused));
    if (!paused) render();
  });
  state.dispose.push(() => watch && watch.stop());
  if (can("create_watch", name)) queueMicrotask(start);
  return section(
    "Live tail",
    h("p", { class: "hint" }, `New records as they are written (newest first; the latest ${formatCount(TAIL_ROWS)} kept); lost ranges show as gaps.`),
    h("div", { class: "actions" }, startButton, pauseButton, h("button", { type: "button", class: "secondary", onclick: () => ((rows = []), render()) }, "Clear")),
    note,
    list,
  );
}

function recordLine(r) {
  return [
    h("span", { class: "seq" }, `#${r.$seq}`),
    h("time", { datetime: new Date(r.$ts).toISOString() }, formatTime(r.$ts)),
    r.$tag !== undefined ? h("span", { class: "badge muted" }, `tag ${r.$tag}`) : null,
    r.$node !== undefined ? h("span", { class: "badge muted" }, `node ${r.$node}`) : null,
    json(r.data),
    r.meta ? h("span", { class: "meta" }, "meta ", json(r.meta)) : null,
  ];
}

// -- record browser ----------------------------------------------------------------------------

function browsePanel(name) {
  const mode = h(
    "select",
    { name: "mode" },
    h("option", { value: "seq" }, "from seq"),
    h("option", { value: "time" }, "from time"),
    h("option", { value: "tag" }, "by tag"),
    h("option", { value: "text" }, "text match"),
  );
  const input = h("input", { type: "text", name: "q", placeholder: "1" });
  const out = h("div");
  const note = status();
  let next = null;
  const hints = {
    seq: "The first seq to show (records after seq − 1).",
    time: "A local time (2026-01-31 12:00:00) or epoch ms: records written at or after it.",
    tag: `An exact tag, or a prefix ending in * — searched over the ${SEARCH_WINDOW} records from the earliest.`,
    text: `Text to find in data, tag, node or meta — searched over a window of ${SEARCH_WINDOW} records.`,
  };
  const hint = h("small", { class: "hint" }, hints.seq);
  mode.addEventListener("change", () => {
    hint.textContent = hints[mode.value];
    input.placeholder = { seq: "1", time: "2026-01-31 12:00", tag: "order-42 or order-*", text: "timeout" }[mode.value];
  });
  const read = async (from) => {
    const q = input.value.trim();
    const body = { limit: mode.value === "seq" || mode.value === "time" ? 50 : SEARCH_WINDOW, include_tags: true, include_meta: true };
    if (from !== null) body.from_seq = from;
    else if (mode.value === "seq") body.from_seq = Math.max(0, (Number(q) || 1) - 1);
    else if (mode.value === "time") {
      const ts = parseTime(q);
      if (ts === null) return setStatus(note, "Not a time: use 2026-01-31 12:00:00 or epoch ms.", "error");
      body.from_ts = ts;
    } else body.from_seq = 0;
    let answer;
    try {
      answer = await call("POST", `/v0/topics/${enc(name)}/diff`, { body });
    } catch (err) {
      return setStatus(note, errorText(err), "error");
    }
    let shown = answer.records;
    let message = `${answer.records.length} records`;
    const first = answer.records.length ? answer.records[0].$seq : null;
    const last = answer.records.length ? answer.records[answer.records.length - 1].$seq : null;
    if (mode.value === "tag") {
      shown = answer.records.filter((r) => (q.endsWith("*") ? (r.$tag || "").startsWith(q.slice(0, -1)) : r.$tag === q));
      message = `${shown.length} with tag ${q}; searched ${answer.records.length} records`;
    } else if (mode.value === "text") {
      shown = textMatches(answer.records, q);
      message = `${shown.length} matching "${q}"; searched ${answer.records.length} records`;
    }
    if (first !== null) message += ` (seq ${first}–${last})`;
    if (answer.tombstone) message += `; seq ${answer.tombstone.gap_from}–${answer.tombstone.gap_to} were lost (${answer.tombstone.reason})`;
    next = answer.caught_up ? null : answer.next_from_seq;
    setStatus(note, message + (next === null ? "; reached the head." : "."), "info");
    fill(
      out,
      table(
        "Records",
        [
          ["Seq", (r) => String(r.$seq)],
          ["Time", (r) => formatTime(r.$ts)],
          ["Tag", (r) => r.$tag ?? ""],
          ["Node", (r) => r.$node ?? ""],
          ["Data", (r) => json(r.data)],
          ["Meta", (r) => (r.meta ? json(r.meta) : "")],
        ],
        shown,
        "No records.",
      ),
      next !== null ? h("button", { type: "button", class: "secondary", onclick: () => read(next) }, "Next window →") : null,
    );
  };
  return section(
    "Browse records",
    h(
      "form",
      { class: "toolbar", onsubmit: (ev) => (ev.preventDefault(), read(null)) },
      field("Find", mode),
      h("div", { class: "field grow" }, h("label", { for: "browse-q" }, "Value"), Object.assign(input, { id: "browse-q" }), hint),
      h("button", { type: "submit" }, "Read"),
    ),
    note,
    out,
  );
}

// -- named consumers ---------------------------------------------------------------------------

function consumersPanel(name) {
  const body = h("div");
  every(5000, async () => {
    const answer = await call("GET", `/v0/topics/${enc(name)}/consumers`);
    refill(
      body,
      table(
        "Named consumers",
        [
          ["Consumer", (c) => c.consumer],
          ["Cursor", (c) => formatCount(c.cursor)],
          ["Lag", (c) => formatCount(c.lag)],
          ["Committed", (c) => (c.committed_at_ms ? `${formatDuration(Date.now() - c.committed_at_ms)} ago` : "never")],
        ],
        answer.consumers,
        "No named consumers.",
      ),
    );
  });
  return section("Named consumers", body);
}

// -- config ------------------------------------------------------------------------------------

function configPanel(name, topic) {
  const editable = can("put_topic", name);
  const note = status();
  const controls = {};
  const errors = {};
  let current = topic.config;
  const fields = state.fields.filter((f) => f.name !== "durable" && (topic.type === "queue" || !f.queueOnly));
  const valueOf = (f) => {
    const v = current[f.name];
    return v === null || v === undefined ? "" : String(v);
  };
  const form = h("form", { class: "config", novalidate: true });
  for (const f of fields) {
    let control;
    if (f.kind === "enum") control = h("select", { name: f.name }, f.options.map((o) => h("option", { value: o }, o)));
    else if (f.kind === "boolean") control = h("select", { name: f.name }, h("option", { value: "true" }, "true"), h("option", { value: "false" }, "false"));
    else control = h("input", { type: "text", name: f.name, inputmode: f.kind.includes("integer") ? "numeric" : "text" });
    control.value = valueOf(f);
    control.disabled = !editable || f.name === "type";
    controls[f.name] = control;
    errors[f.name] = h("small", { class: "field-error", id: `err-${f.name}`, role: "alert" });
    control.setAttribute("aria-describedby", `err-${f.name}`);
    form.append(
      h("div", { class: "field" }, h("label", { for: `cfg-${f.name}` }, f.name), Object.assign(control, { id: `cfg-${f.name}` }), h("small", { class: "hint" }, f.description.replace(/^Queue only\.\s*/, "").split(". ")[0].replace(/\.$/, "") + "."), errors[f.name]),
    );
  }
  const save = async (ev) => {
    ev.preventDefault();
    for (const e of Object.values(errors)) e.textContent = "";
    const changed = {};
    for (const f of fields) if (controls[f.name].value !== valueOf(f)) changed[f.name] = controls[f.name].value;
    const body = configBody(fields, changed);
    if (Object.keys(body).length === 0) return setStatus(note, "Nothing changed.", "info");
    try {
      const answer = await call("PUT", `/v0/topics/${enc(name)}`, { body });
      current = answer.config;
      for (const f of fields) controls[f.name].value = valueOf(f);
      setStatus(note, `Saved: PUT /v0/topics/${name} ${JSON.stringify(body)}`, "ok");
    } catch (err) {
      const where = err instanceof ApiError ? String(err.detail.field || "").split(/[.[]/)[0] : "";
      if (errors[where]) {
        errors[where].textContent = err.message;
        controls[where].setAttribute("aria-invalid", "true");
        controls[where].focus();
      }
      setStatus(note, errorText(err), "error");
    }
  };
  form.addEventListener("submit", save);
  if (editable) form.append(h("div", { class: "actions" }, h("button", { type: "submit" }, "Save config")));
  return section(
    "Config",
    editable ? h("p", { class: "hint" }, "Changed fields are sent as PUT /v0/topics/{topic} (an upsert); the server's validation errors show beside the field.") : h("p", { class: "hint" }, "Read-only: changing the config needs the admin scope."),
    form,
    note,
  );
}

// -- delete records ----------------------------------------------------------------------------

function deletePanel(name) {
  const before = h("input", { type: "text", inputmode: "numeric", name: "before_seq" });
  const tag = h("input", { type: "text", name: "tag" });
  const note = status();
  const submit = async (ev) => {
    ev.preventDefault();
    if (before.value && !/^\d+$/.test(before.value.trim())) return setStatus(note, "before seq must be a whole number.", "error");
    const body = deleteBody(before.value.trim(), tag.value.trim());
    if (body === null) return setStatus(note, "Give a seq bound, a tag, or both.", "error");
    let scope = "";
    if (body.before_seq !== undefined) {
      const t = await call("GET", `/v0/topics/${enc(name)}`).catch(() => null);
      const last = t ? Math.min(body.before_seq - 1, t.head_seq) : 0;
      if (t && t.count > 0 && last >= t.earliest_seq) {
        scope = ` That is seq ${t.earliest_seq}–${last}: at most ${formatCount(last - t.earliest_seq + 1)} of the ${formatCount(t.count)} records${body.match ? " (those with the tag)" : ""}.`;
      } else if (t) scope = " No retained record is below that seq.";
    }
    const message = `${describeDelete(name, body)}${scope} This cannot be undone.`;
    if (!(await confirmDialog(`Delete records from ${name}?`, message, "Delete"))) return;
    try {
      const r = await call("POST", `/v0/topics/${enc(name)}/delete`, { body });
      setStatus(note, `Deleted ${formatCount(r.deleted)} records; the earliest seq is now ${r.earliest_seq}.`, "ok");
    } catch (err) {
      setStatus(note, errorText(err), "error");
    }
  };
  return section(
    "Delete records",
    h(
      "form",
      { class: "toolbar", onsubmit: submit },
      field("Delete every seq below", before),
      field("Only with tag (prefix*)", tag),
      h("button", { type: "submit", class: "danger" }, "Delete…"),
    ),
    note,
  );
}

// -- routers -----------------------------------------------------------------------------------

function routersPage() {
  const body = h("div");
  const graph = h("div", { class: "graph" });
  const note = status();
  every(3000, async () => {
    const list = await call("GET", "/v0/routers");
    const routers = await Promise.all(list.routers.map((r) => call("GET", `/v0/routers/${enc(r.router)}`).catch(() => r)));
    refill(
      body,
      table(
        "Routers",
        [
          ["Router", (r) => r.router],
          ["Source", (r) => h("a", { href: `#/topic/${enc(r.source)}` }, r.source)],
          ["Dest", (r) => h("a", { href: `#/topic/${enc(r.dest)}` }, r.dest)],
          ["Forwarded", (r) => formatCount(r.forwarded_total)],
          ["Lag", (r) => (r.lag === undefined ? "–" : formatCount(r.lag))],
          ["Source trimmed", (r) => (r.source_trimmed ? h("span", { class: "badge warn" }, formatCount(r.source_trimmed)) : "0")],
          ["Guarantee", (r) => r.guarantee],
          ["Filter", (r) => (r.filter ? json(r.filter) : "")],
        ],
        routers,
        "No routers.",
      ),
    );
    fill(graph, routers.length && routers.length <= 16 ? routerGraph(routers) : null);
  }, note);
  return h("div", { class: "page" }, h("h1", {}, "Routers"), note, graph, body);
}

/** Topics as boxes in columns (a topic one column right of its sources), routers as arrows. */
function routerGraph(routers) {
  const NS = "http://www.w3.org/2000/svg";
  const col = new Map();
  for (const r of routers) col.set(r.source, 0), col.set(r.dest, 0);
  for (let i = 0; i < 4; i++) for (const r of routers) if (r.source !== r.dest) col.set(r.dest, Math.min(3, Math.max(col.get(r.dest), col.get(r.source) + 1)));
  const rows = new Map();
  const pos = new Map();
  for (const [topic, c] of col) {
    const row = rows.get(c) || 0;
    rows.set(c, row + 1);
    pos.set(topic, [20 + c * 220, 20 + row * 50]);
  }
  const width = 20 + (Math.max(...col.values()) + 1) * 220;
  const height = 20 + Math.max(...rows.values()) * 50;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", routers.map((r) => `${r.source} to ${r.dest}`).join("; "));
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text) e.textContent = text;
    svg.append(e);
  };
  for (const r of routers) {
    const [x1, y1] = pos.get(r.source);
    const [x2, y2] = pos.get(r.dest);
    el("line", { x1: x1 + 160, y1: y1 + 15, x2, y2: y2 + 15, class: r.source_trimmed ? "edge warn" : "edge" });
    el("text", { x: (x1 + 160 + x2) / 2, y: (y1 + y2) / 2 + 10, class: "edge-label" }, `${formatCount(r.forwarded_total)} · lag ${r.lag ?? "–"}`);
  }
  for (const [topic, [x, y]] of pos) {
    el("rect", { x, y, width: 160, height: 30, rx: 4, class: "node" });
    el("text", { x: x + 8, y: y + 20, class: "node-label" }, topic.length > 22 ? `${topic.slice(0, 21)}…` : topic);
  }
  return svg;
}

// -- server ------------------------------------------------------------------------------------

function serverPage() {
  const health = h("dl", { class: "stats" });
  const charts = h("div", { class: "charts" });
  const note = status();
  const series = {
    appends: new Series(),
    bytes: new Series(),
    fsync: new Series(),
    streams: new Series(),
    cutoff: new Series(),
    hits: new Series(),
  };
  let previous = null;
  every(2000, async () => {
    const [live, ready] = await Promise.all([
      call("GET", "/v0/health").catch((err) => ({ status: errorText(err) })),
      call("GET", "/v0/ready").catch((err) => ({ status: "not ready", error: err })),
    ]);
    const progress = ready.error && ready.error.detail ? ready.error.detail.replay_progress : undefined;
    fill(
      health,
      stat("Health", live.status),
      stat("Version", live.version || "–"),
      stat("Uptime", formatDuration(live.uptime_ms)),
      stat("Ready", ready.error ? `${ready.error.code}${progress !== undefined ? ` — recovery ${Math.round(progress * 100)}%` : ""}` : ready.status),
      stat("Topics", ready.topics !== undefined ? formatCount(ready.topics) : "–"),
    );
  });
  every(METRICS_POLL_MS, async () => {
    let text;
    try {
      text = await call("GET", "/v0/metrics", { text: true, extraHeaders: { Accept: "text/plain" } });
    } catch (err) {
      setStatus(note, `metrics: ${errorText(err)}`, "error");
      return;
    }
    const m = parsePrometheus(text);
    const now = Date.now();
    const cur = {
      appended: metricSum(m, "topics_records_appended_total"),
      fsyncSum: metricSum(m, "topics_wal_fsync_duration_seconds_sum"),
      fsyncCount: metricSum(m, "topics_wal_fsync_duration_seconds_count"),
      hits: metricSum(m, "topics_cache_hits_total"),
      misses: metricSum(m, "topics_cache_misses_total"),
    };
    const dt = previous ? (now - previous.t) / 1000 : 0;
    series.appends.push(now, counterRate(previous && previous.appended, cur.appended, dt));
    series.bytes.push(now, metricSum(m, "topics_bytes_live"));
    const fsync = previous ? intervalMean(previous.fsyncSum, previous.fsyncCount, cur.fsyncSum, cur.fsyncCount) : null;
    series.fsync.push(now, fsync === null ? null : fsync * 1000);
    series.streams.push(now, metricSum(m, "topics_sse_connections"));
    series.cutoff.push(now, hasMetric(m, "topics_throttle_cutoff") ? metricSum(m, "topics_throttle_cutoff") : null);
    const lookups = previous ? cur.hits - previous.hits + (cur.misses - previous.misses) : 0;
    series.hits.push(now, lookups > 0 ? ((cur.hits - previous.hits) / lookups) * 100 : null);
    previous = { t: now, ...cur };
    setStatus(note, `from /v0/metrics every ${METRICS_POLL_MS / 1000} s; last at ${formatTime(now)}`);
    const chart = (title, s, format) =>
      h("figure", { class: "chart" }, h("figcaption", {}, title, h("strong", {}, s.last() === null ? "–" : format(s.last()))), sparkline(s, title));
    fill(
      charts,
      chart("Appends / s", series.appends, formatRate),
      chart("Bytes retained", series.bytes, formatBytes),
      chart("fsync latency (mean, ms)", series.fsync, (v) => v.toFixed(2)),
      chart("Open SSE streams", series.streams, formatCount),
      chart("Throttle cutoff (priority)", series.cutoff, (v) => String(v)),
      chart("Cache hit rate (%)", series.hits, (v) => v.toFixed(1)),
    );
  });
  return h("div", { class: "page" }, h("h1", {}, "Server"), health, h("h2", {}, "Live metrics"), note, charts);
}

// -- start -------------------------------------------------------------------------------------

window.addEventListener("hashchange", route);
boot().catch((err) => fill(main(), h("p", { class: "status error", role: "alert" }, `The console could not start: ${errorText(err)}`)));
