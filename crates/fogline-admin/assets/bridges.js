// The bridges panel, shown only when the snapshot carries `bridges` (the node runs
// bridges): each bridge's state, records carried and their rate (from the previous
// snapshot's count), lag in records and seconds, errors and the last one.
"use strict";

const bridgePrev = new Map(); // name -> {t, records}

const BRIDGES_TABLE = {
  id: "bridges", numeric: [3, 4, 5, 6, 7], empty: "no bridges",
  row: (b) => [b.name, b.kind, b.state, count(b.records), b.rate, count(b.lag_records),
    b.lag_seconds.toFixed(1), count(b.errors), b.last_error || ""],
  rowClass: (b) => "bridge-" + b.state,
};

SNAPSHOT_HOOKS.push((s) => {
  const on = Array.isArray(s.bridges);
  document.getElementById("panel-bridges").hidden = !on;
  if (!on) return;
  const t = s.time_us / 1e6;
  const rows = s.bridges.map((b) => {
    const prev = bridgePrev.get(b.name);
    const r = prev && t > prev.t ? rate(Math.max(0, b.records - prev.records) / (t - prev.t)) : "-";
    bridgePrev.set(b.name, { t, records: b.records });
    return Object.assign({ rate: r }, b);
  });
  fillRows(document.querySelector("#bridges tbody"), BRIDGES_TABLE, rows);
  setText("bridges-more", s.bridges_count > s.bridges.length
    ? "(the first " + s.bridges.length + " of " + count(s.bridges_count) + ")" : "");
});
