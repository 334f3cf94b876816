// The rules panel and the alerts feed. Both are shown only when the snapshot carries
// `rules` (the node runs the rules component). Rows are kept per rule id and updated in
// place, so a button is never replaced under the pointer between two snapshots.
//
// Alerts: the rules' results as published on their topics (each row's `topics`), read from
// /api/v1/subscribe; the newest first, at most MAX_ALERTS rows kept.
"use strict";

const MAX_ALERTS = 100;
const MAX_FILTERS = 16; // the endpoint's limit
const ruleRows = new Map(); // id -> {tr, prev: {t, n}}
let alertFeed = null; // {key, source}
let filterRules = new Map(); // filter -> rule ids publishing on it

function ago(seconds) {
  if (seconds < 1) return "just now";
  if (seconds < 120) return Math.floor(seconds) + " s ago";
  if (seconds < 7200) return Math.floor(seconds / 60) + " min ago";
  return Math.floor(seconds / 3600) + " h ago";
}

function link(href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  a.target = "_blank";
  return a;
}

function ruleRow(id) {
  const tr = document.createElement("tr");
  tr.dataset.id = id;
  for (let i = 0; i < 7; i++) {
    const td = tr.insertCell();
    if (i >= 2 && i <= 5) td.className = "num";
  }
  const ops = tr.insertCell();
  ops.className = "ops";
  for (const op of ["start", "stop", "restart"]) {
    const b = document.createElement("button");
    b.textContent = op;
    b.dataset.op = op;
    ops.appendChild(b);
  }
  const path = "/api/v1/rules/" + encodeURIComponent(id);
  ops.append(link(path, "json"), link(path + "/status", "status"));
  return tr;
}

function setCell(td, text, title) {
  if (td.textContent !== text) td.textContent = text;
  if ((td.title || "") !== (title || "")) td.title = title || "";
}

function renderRules(s) {
  const body = document.querySelector("#rules tbody");
  const t = s.time_us / 1e6;
  const seen = new Set();
  const empty = body.querySelector(".empty");
  if (s.rules.length && empty) empty.parentElement.remove();
  s.rules.forEach((r, i) => {
    seen.add(r.id);
    let entry = ruleRows.get(r.id);
    if (!entry) {
      entry = { tr: ruleRow(r.id), prev: null };
      ruleRows.set(r.id, entry);
    }
    // The snapshot's order (by id); a row in place is not moved.
    if (body.rows[i] !== entry.tr) body.insertBefore(entry.tr, body.rows[i] || null);
    let perSecond = "-";
    if (entry.prev && t > entry.prev.t) {
      perSecond = rate(Math.max(0, r.records_in - entry.prev.n) / (t - entry.prev.t));
    }
    entry.prev = { t, n: r.records_in };
    const c = entry.tr.cells;
    entry.tr.className = "rule-" + r.status;
    setCell(c[0], r.id, r.topics.length ? "publishes on " + r.topics.join(", ") : "");
    setCell(c[1], r.status + (r.restarts ? " (" + r.restarts + " restarts)" : ""), r.reason || "");
    setCell(c[2], count(r.records_in));
    setCell(c[3], count(r.results));
    setCell(c[4], count(r.exceptions), r.last_exception || "");
    setCell(c[5], perSecond);
    const out = r.last_output_ms ? ago(s.time_us / 1e3 / 1e3 - r.last_output_ms / 1e3) : "never";
    setCell(c[6], out, r.last_output_ms ? new Date(r.last_output_ms).toISOString() : "");
    const running = r.status === "running" || r.status === "restarting";
    c[7].querySelector("[data-op=start]").disabled = running;
    c[7].querySelector("[data-op=stop]").disabled = !running;
  });
  for (const [id, entry] of ruleRows) {
    if (!seen.has(id)) { entry.tr.remove(); ruleRows.delete(id); }
  }
  if (s.rules.length === 0 && !empty) {
    const td = body.insertRow().insertCell();
    td.colSpan = 8;
    td.className = "empty";
    td.textContent = "no rules (POST /api/v1/rules to add one)";
  }
  setText("rules-more", s.rules_count > s.rules.length
    ? "(the first " + s.rules.length + " of " + count(s.rules_count) + ")" : "");
}

async function ruleOp(id, op) {
  const r = await fetch("/api/v1/rules/" + encodeURIComponent(id) + "/" + op, { method: "POST" });
  const body = await r.json().catch(() => ({}));
  const text = r.ok ? body.message : (body.error ? body.error.message : "HTTP " + r.status);
  setText("rules-message", text || "");
}

document.getElementById("rules").addEventListener("click", (e) => {
  const b = e.target.closest("button[data-op]");
  if (!b) return;
  const id = b.closest("tr").dataset.id;
  ruleOp(id, b.dataset.op).catch((err) => setText("rules-message", String(err)));
});

// (Re)subscribes when the set of topics the rules publish on changes.
function followAlerts(rules) {
  filterRules = new Map();
  for (const r of rules) {
    for (const f of r.topics) {
      if (!filterRules.has(f)) filterRules.set(f, []);
      filterRules.get(f).push(r.id);
    }
  }
  const filters = [...filterRules.keys()].sort().slice(0, MAX_FILTERS);
  const key = filters.join("\n");
  if (alertFeed && alertFeed.key === key) return;
  if (alertFeed && alertFeed.source) alertFeed.source.close();
  alertFeed = { key, source: null };
  setText("alerts-on", filters.length ? "on " + filters.join(", ") : "(no rule publishes on a topic)");
  if (!filters.length) return;
  const query = filters.map((f) => "filter=" + encodeURIComponent(f)).join("&");
  alertFeed.source = new EventSource("/api/v1/subscribe?" + query);
  alertFeed.source.addEventListener("message", (e) => addAlert(JSON.parse(e.data)));
}

function addAlert(m) {
  const body = document.querySelector("#alerts tbody");
  const tr = body.insertRow(0);
  const time = new Date(m.time_us / 1e3).toISOString().replace("T", " ").replace(/Z$/, "");
  const shown = m.payload + (m.size > m.payload.length ? " …(" + bytes(m.size) + ")" : "");
  const cells = [time, (filterRules.get(m.filter) || []).join(", "), m.topic, shown];
  for (const text of cells) tr.insertCell().textContent = text;
  if (m.dropped) tr.title = m.dropped + " records dropped on " + m.filter + " (the page was too slow)";
  while (body.rows.length > MAX_ALERTS) body.deleteRow(-1);
}

SNAPSHOT_HOOKS.push((s) => {
  const on = Array.isArray(s.rules);
  document.getElementById("panel-rules").hidden = !on;
  document.getElementById("panel-alerts").hidden = !on;
  if (!on) return;
  renderRules(s);
  followAlerts(s.rules);
});
