// DOM helpers and the widgets every page uses. Text always goes in as text (never HTML), so
// record data cannot inject markup.

/** `h("a", {href: "#/"}, "Topics")`: an element with attributes (`on*` functions become event
 * listeners; `class`, `for`, `aria-*` as attributes; `false`/`null` left out) and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Replaces an element's children as {@link fill} does, for a panel that refreshes itself:
 * the control that had the keyboard focus inside it (found again by its tag and its accessible
 * name) gets it back, so polling never throws a keyboard user out of a table. */
export function refill(el, ...children) {
  const active = document.activeElement;
  const had = active && active !== el && el.contains(active) ? focusKey(active) : null;
  fill(el, ...children);
  if (had !== null) {
    const again = [...el.querySelectorAll(had.tag)].find((c) => focusKey(c).name === had.name);
    if (again) again.focus();
  }
  return el;
}

function focusKey(el) {
  return { tag: el.tagName.toLowerCase(), name: el.getAttribute("aria-label") || el.getAttribute("href") || el.textContent };
}

/** A table: `columns` are `[header, (row) => cell]`; an empty `rows` shows `empty`. */
export function table(label, columns, rows, empty = "Nothing here.") {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { "aria-label": label },
      h("thead", {}, h("tr", {}, columns.map(([name]) => h("th", { scope: "col" }, name)))),
      h(
        "tbody",
        {},
        rows.map((row) => h("tr", {}, columns.map(([name, cell]) => h("td", { "data-label": name }, cell(row))))),
      ),
    ),
  );
}

/** A labelled statistic, for the counters at the top of a page. */
export function stat(label, value, id = null) {
  return h("div", { class: "stat" }, h("dt", {}, label), h("dd", { "data-stat": id || label }, value));
}

/** JSON as compact, wrapped text. */
export function json(value) {
  return h("code", { class: "json" }, JSON.stringify(value));
}

/** A status line for a panel (`role=status`, read out by screen readers). */
export function status(kind = "info") {
  return h("p", { class: `status ${kind}`, role: "status", "aria-live": "polite" });
}

export function setStatus(el, text, kind = "info") {
  delete el.dataset.polling; // (app.js every(): a poll's error, replaced by this text)
  el.className = `status ${kind}`;
  el.textContent = text;
}

/** Asks for confirmation in a modal dialog stating exactly what will happen; resolves true on
 * confirm. `danger` styles the confirm button. */
export function confirmDialog(title, message, confirmLabel = "Confirm") {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, title),
      h("p", { class: "confirm-message" }, message),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "secondary", value: "cancel", onclick: () => dialog.close("cancel") }, "Cancel"),
        h("button", { type: "button", class: "danger", value: "ok", onclick: () => dialog.close("ok") }, confirmLabel),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "ok");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A labelled form control: `field("Prefix", input)` → label wrapping its control. */
export function field(label, control, hint = null) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    hint ? h("small", { class: "hint" }, hint) : null,
  );
}

/** A section with a heading. */
export function section(title, ...children) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h("section", { class: "panel", "aria-labelledby": id }, h("h2", { id }, title), children);
}
