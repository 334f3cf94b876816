// The dashboard: one page fed by /api/v1/events (Server-Sent Events, one snapshot a
// second). Rates are derived from successive totals; the chart keeps the last five minutes
// and is drawn in plain SVG (no library to fetch or vendor).
//
// A panel is an entry of PANELS: an id, a title, the snapshot field it shows and how to
// turn one item into table cells. A component that adds a field to the snapshot adds a
// panel here, or a script of its own that registers in SNAPSHOT_HOOKS (rules.js); a panel
// whose field is absent is not shown.
//
// The interests and producers panel (Associative Rendezvous) has two tables in the page,
// filled the same way from the snapshot's `rendezvous` lists (the first 100 of each; the
// counts beside them say how many there are).
"use strict";

const WINDOW_SECONDS = 300;
const history = []; // {t, rin, rout} in seconds and records per second
let last = null; // the previous snapshot's time and totals
const SNAPSHOT_HOOKS = []; // functions other scripts call with each snapshot

const PANELS = [
  {
    id: "streams", title: "Streams", field: "streams",
    columns: ["name", "storage", "subjects", "records", "size", "retention", "last record"],
    numeric: [3, 4],
    row: (s) => [s.name, s.storage, s.subjects.join(" "), count(s.records), bytes(s.bytes),
      retention(s), s.last_time ? s.last_time.replace("T", " ").replace(/\.\d+Z$/, "Z") : "-"],
  },
  {
    id: "consumers", title: "Consumers", field: "consumers",
    columns: ["stream", "name", "open", "ack floor", "lag", "pending acks", "redelivered"],
    numeric: [3, 4, 5, 6],
    row: (c) => [c.stream, c.name === null ? "(ephemeral)" : c.name, c.open ? "yes" : "no",
      count(c.ack_floor), count(c.lag), count(c.pending_acks), count(c.redelivered)],
  },
  {
    id: "components", title: "Components", field: "components",
    columns: ["component", "state", "listening on", "detail"],
    numeric: [],
    row: (c) => [c.name, c.state, c.endpoints.map((e) => e.kind + " " + e.address + " (" + e.security + ")").join(", "),
      c.detail || ""],
    rowClass: (c) => "state-" + c.state,
  },
];

// The tables of the interests and producers panel, as PANELS' entries (their heads are in
// the page).
const RENDEZVOUS = [
  {
    id: "interests", field: "interests", total: (s) => s.interests, numeric: [3],
    empty: "no subscription with an interest (fogline sub --profile ...)",
    row: (i) => [i.filter, i.interest, connection(i.connection), count(i.queued_records)],
  },
  {
    id: "producers", field: "producers", total: (s) => s.producers_waiting + s.producers_sending,
    numeric: [], empty: "no producer announced (fogline announce ...)",
    row: (p) => [p.topic, p.profile, p.interested ? "sending" : "waiting", connection(p.connection)],
    rowClass: (p) => p.interested ? "producer-sending" : "producer-waiting",
  },
];

function connection(id) { return id === null ? "-" : String(id); }

function count(n) { return Number(n).toLocaleString("en-US"); }

function rate(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(2) + " M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + " k";
  return n.toFixed(n < 10 ? 1 : 0);
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function seconds(s) {
  if (s >= 86400 && s % 86400 === 0) return s / 86400 + "d";
  if (s >= 3600 && s % 3600 === 0) return s / 3600 + "h";
  if (s >= 60 && s % 60 === 0) return s / 60 + "m";
  return s + "s";
}

function retention(s) {
  const size = s.retention_bytes === null ? "no size limit" : bytes(s.retention_bytes);
  const age = s.retention_age_seconds === null ? "no age limit" : seconds(s.retention_age_seconds);
  return size + ", " + age;
}

function setText(id, text) {
  const el = document.getElementById(id);
  if (el.textContent !== text) el.textContent = text;
}

function uptime(s) {
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return "up " + (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + Math.floor(s % 60) + "s";
}

function drawChart() {
  const svg = document.getElementById("chart");
  const w = 800, h = 200;
  const now = history.length ? history[history.length - 1].t : 0;
  const max = Math.max(1, ...history.map((p) => Math.max(p.rin, p.rout)));
  const x = (t) => w - (now - t) / WINDOW_SECONDS * w;
  const y = (v) => h - 4 - v / max * (h - 12);
  const line = (key) => history.map((p) => x(p.t).toFixed(1) + "," + y(p[key]).toFixed(1)).join(" ");
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  for (const f of [0.25, 0.5, 0.75]) {
    const g = document.createElementNS(ns, "line");
    g.setAttribute("class", "grid");
    g.setAttribute("x1", 0); g.setAttribute("x2", w);
    g.setAttribute("y1", y(max * f)); g.setAttribute("y2", y(max * f));
    svg.appendChild(g);
  }
  for (const key of ["rin", "rout"]) {
    const p = document.createElementNS(ns, "polyline");
    p.setAttribute("class", key === "rin" ? "in" : "out");
    p.setAttribute("points", line(key));
    svg.appendChild(p);
  }
  setText("chart-max", "top of the chart: " + rate(max) + " records/s");
}

function renderPanel(panel, items) {
  let section = document.getElementById("panel-" + panel.id);
  if (!section) {
    section = document.createElement("section");
    section.className = "panel";
    section.id = "panel-" + panel.id;
    const h = document.createElement("h2");
    h.textContent = panel.title;
    const table = document.createElement("table");
    table.id = panel.id;
    const head = table.createTHead().insertRow();
    panel.columns.forEach((c, i) => {
      const th = document.createElement("th");
      th.textContent = c;
      if (panel.numeric.includes(i)) th.className = "num";
      head.appendChild(th);
    });
    table.createTBody();
    section.append(h, table);
    document.getElementById("panels").appendChild(section);
  }
  fillRows(section.querySelector("tbody"), panel, items);
}

// Replaces a table's rows with one per item (text only: names, filters and profiles are
// the clients'), or one saying there are none.
function fillRows(body, panel, items) {
  body.replaceChildren();
  if (items.length === 0) {
    const td = body.insertRow().insertCell();
    td.colSpan = body.parentElement.tHead.rows[0].cells.length;
    td.className = "empty";
    td.textContent = panel.empty || "none";
    return;
  }
  for (const item of items) {
    const tr = body.insertRow();
    if (panel.rowClass) tr.className = panel.rowClass(item);
    panel.row(item).forEach((cell, i) => {
      const td = tr.insertCell();
      td.textContent = String(cell);
      if (panel.numeric.includes(i)) td.className = "num";
    });
  }
}

function onSnapshot(s) {
  const t = s.time_us / 1e6;
  if (last && t > last.t) {
    const dt = t - last.t;
    const rin = Math.max(0, s.totals.records_in - last.totals.records_in) / dt;
    const rout = Math.max(0, s.totals.records_out - last.totals.records_out) / dt;
    const bin = Math.max(0, s.totals.bytes_in - last.totals.bytes_in) / dt;
    history.push({ t, rin, rout });
    while (history.length && history[0].t < t - WINDOW_SECONDS) history.shift();
    setText("rate-in", rate(rin));
    setText("rate-out", rate(rout));
    setText("bytes-in", bytes(bin));
    drawChart();
  }
  last = { t, totals: s.totals };
  const conns = Object.entries(s.connections);
  setText("connections", count(conns.reduce((a, [, n]) => a + n, 0)));
  setText("connections-by", conns.filter(([, n]) => n > 0).map(([p, n]) => p + " " + n).join(", "));
  setText("subscriptions", count(s.subscriptions));
  setText("memory", s.rss_bytes === null ? "-" : bytes(s.rss_bytes));
  setText("uptime", uptime(s.uptime_seconds));
  const healthy = s.components.every((c) => c.state === "running" || c.state === "disabled");
  const badge = document.getElementById("health");
  badge.textContent = healthy ? "healthy" : "degraded";
  badge.className = "badge " + (healthy ? "ok" : "bad");
  for (const panel of PANELS) {
    if (Array.isArray(s[panel.field])) renderPanel(panel, s[panel.field]);
  }
  if (s.rendezvous) renderRendezvous(s);
  for (const hook of SNAPSHOT_HOOKS) hook(s);
}

function renderRendezvous(s) {
  setText("rendezvous-counts", "interests: " + count(s.interests) + ", producers waiting: " +
    count(s.producers_waiting) + ", sending: " + count(s.producers_sending));
  for (const table of RENDEZVOUS) {
    const items = s.rendezvous[table.field];
    fillRows(document.querySelector("#" + table.id + " tbody"), table, items);
    const total = table.total(s);
    setText(table.id + "-more", total > items.length
      ? "(the first " + items.length + " of " + count(total) + ")" : "");
  }
}

async function loadNode() {
  const r = await fetch("/api/v1/node");
  if (!r.ok) return;
  const n = await r.json();
  setText("node-id", "node " + n.id);
  setText("version", "v" + n.version);
}

function connect() {
  const feed = new EventSource("/api/v1/events");
  feed.addEventListener("snapshot", (e) => onSnapshot(JSON.parse(e.data)));
  feed.onerror = () => {
    const badge = document.getElementById("health");
    badge.textContent = "disconnected";
    badge.className = "badge bad";
  };
}

loadNode().catch(() => {});
connect();
