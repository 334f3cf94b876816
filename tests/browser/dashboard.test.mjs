// The dashboard in a real headless browser: Debian's chromium, driven by playwright-core.
//
//   node tests/browser/dashboard.test.mjs target/debug/fogline
//
// Starts `fogline serve` on ephemeral ports, creates a second stream with the CLI, opens the
// dashboard, and checks that the page loads without console errors, lists the node's
// streams, and that its ingest rate moves after records are published. Then creates a SQL
// stream and a rule over REST, publishes JSON readings with the CLI, and checks that the
// rules panel counts them, that the alerts feed shows the rule's results, and that the
// panel's stop and start buttons stop and start the rule. Then checks the interests and
// producers panel: empty at first; a producer announced with `fogline announce` (its profile
// holds markup, which must show as text) listed waiting, then sending once `fogline sub
// --profile` subscribes with a matching interest, which is listed too; waiting again when
// the subscriber goes. The bridges panel is hidden on a node without bridges; a node with a
// Kafka bridge pointed at a closed port lists it down with its last error. A second node
// without the rules component shows neither rules panel. Exits 0 on success.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const bin = process.argv[2] || "target/debug/fogline";
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const dir = mkdtempSync(join(tmpdir(), "fogline-browser-"));
const children = [];

function fail(message) {
  console.error("FAIL: " + message);
  cleanup();
  process.exit(1);
}

function cleanup() {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}

// Starts the node and resolves with its native and HTTP addresses from the banner.
function startNode(name = "data", extra = []) {
  const node = spawn(bin, ["serve", "--data-dir", join(dir, name), "--listen", "127.0.0.1:0",
    "--mqtt", "127.0.0.1:0", "--http", "127.0.0.1:0", ...extra], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(node);
  return new Promise((resolve, reject) => {
    const found = {};
    const said = [];
    const lines = createInterface({ input: node.stderr });
    lines.on("line", (line) => {
      said.push(line);
      const native = line.match(/^ {2}native protocol +(\S+)/);
      const http = line.match(/^ {2}dashboard +http:\/\/(\S+?)\//);
      if (native) found.native = native[1];
      if (http) found.http = http[1];
      if (found.native && found.http && !found.done) {
        found.done = true;
        resolve(found);
      }
    });
    node.on("exit", (code) => reject(new Error("fogline serve exited with " + code + ": " + said.slice(0, said.findIndex((l) => l.startsWith("Stack backtrace")) >>> 0).slice(-8).join("\n"))));
    setTimeout(() => reject(new Error("no banner within 20 s")), 20000);
  });
}

function numberIn(text) {
  // "12.3 k" -> 12300, "1.25 M" -> 1250000, "-" -> NaN
  const m = text.trim().match(/^([\d.]+)\s*([kM]?)/);
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === "k" ? 1e3 : m[2] === "M" ? 1e6 : 1);
}

async function api(node, method, path, body) {
  const r = await fetch("http://" + node.http + path, {
    method, headers: { "content-type": "application/json" }, body: body && JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) fail(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

function publishReadings(node, id, temperature, count) {
  const body = JSON.stringify({ id, temperature });
  execFileSync(bin, ["pub", `sensors/${id}/temp`, body, "--count", String(count), "--ack",
    "--server", node.native], { stdio: "pipe" });
}

// The rule's cells in the rules panel: [id, state, records in, results, ...].
async function ruleCells(page, id) {
  return page.$$eval(`#rules tr[data-id="${id}"] td`, (tds) => tds.map((t) => t.textContent));
}

async function waitForRule(page, id, test, what) {
  const deadline = Date.now() + 15000;
  let cells = [];
  while (Date.now() < deadline) {
    cells = await ruleCells(page, id);
    if (cells.length && test(cells)) return cells;
    await page.waitForTimeout(200);
  }
  fail(`rule ${id}: ${what}; the panel shows ${JSON.stringify(cells)}`);
}

async function checkRules(page, node) {
  await api(node, "POST", "/api/v1/streams", { sql: "CREATE STREAM demo (id STRING, temperature FLOAT) " +
    "WITH (DATASOURCE=\"sensors/+/temp\", FORMAT=\"json\")" });
  await api(node, "POST", "/api/v1/rules", {
    id: "hot", sql: "SELECT id, temperature FROM demo WHERE temperature > 50",
    actions: [{ publish: { topic: "alerts/{id}", sendSingle: true } }],
  });
  await page.waitForSelector("#panel-rules:not([hidden])", { timeout: 15000 });
  await waitForRule(page, "hot", (c) => c[1] === "running", "not listed running");
  // The alerts feed follows the rule's topic once a snapshot names it.
  await page.waitForFunction(() => document.getElementById("alerts-on").textContent === "on alerts/+",
    null, { timeout: 15000 });
  const deadline = Date.now() + 15000;
  while (!(await api(node, "GET", "/api/v1/subscriptions")).some((s) => s.filter === "alerts/+")) {
    if (Date.now() > deadline) fail("the alerts feed did not subscribe to alerts/+");
    await new Promise((r) => setTimeout(r, 100));
  }
  const count = (cells) => Number(cells[2].replace(/,/g, ""));
  publishReadings(node, "s1", 72.5, 3);
  const first = await waitForRule(page, "hot", (c) => count(c) >= 3 && c[3] !== "0", "no records counted");
  publishReadings(node, "s2", 20, 4);
  const second = await waitForRule(page, "hot", (c) => count(c) >= 7, "the count did not rise");
  await page.waitForFunction(() => [...document.querySelectorAll("#alerts tbody tr")]
    .some((r) => r.cells[2].textContent === "alerts/s1"), null, { timeout: 15000 });
  const alert = await page.$eval("#alerts tbody tr", (r) => [...r.cells].map((c) => c.textContent).join(" | "));
  if (!alert.includes("72.5") || !alert.includes("hot")) fail("the alert is not the rule's result: " + alert);

  await page.click('#rules tr[data-id="hot"] button[data-op="stop"]');
  const stopped = await waitForRule(page, "hot", (c) => c[1] === "stopped", "the stop button did not stop it");
  const listed = (await api(node, "GET", "/api/v1/rules")).find((r) => r.id === "hot");
  if (listed.status !== "stopped") fail("the REST API says the rule is " + listed.status);
  await page.click('#rules tr[data-id="hot"] button[data-op="start"]');
  const started = await waitForRule(page, "hot", (c) => c[1] === "running", "the start button did not start it");
  return {
    counts: [first[2], second[2]],
    states: [second[1], stopped[1], started[1]],
    alert,
  };
}

// The rows of a table of the interests and producers panel, as their cells' text.
async function tableRows(page, id) {
  return page.$$eval(`#${id} tbody tr`, (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
}

async function waitForRows(page, id, test, what) {
  const deadline = Date.now() + 15000;
  let rows = [];
  while (Date.now() < deadline) {
    rows = await tableRows(page, id);
    if (test(rows)) return rows;
    await page.waitForTimeout(200);
  }
  fail(`#${id}: ${what}; the panel shows ${JSON.stringify(rows)}`);
}

const isEmpty = (rows) => rows.length === 1 && rows[0].length === 1 && rows[0][0].startsWith("no ");

// Resolves when `child` has exited.
function exited(child) {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve() : new Promise((r) => child.once("exit", r));
}

async function checkRendezvous(page, node) {
  await waitForRows(page, "interests", isEmpty, "no empty state without interests");
  await waitForRows(page, "producers", isEmpty, "no empty state without producers");
  // A profile is user input: the markup in it must show as text.
  const profile = "sensor=lidar note=<b>x</b>";
  const announce = spawn(bin, ["announce", "-s", node.native, "-t", "site/a", "-p", profile, "--", "sleep", "60"],
    { stdio: "ignore" });
  children.push(announce);
  const isProducer = (state) => (rows) => rows.some((r) => r[0] === "site/a" && r[2] === state);
  const waiting = await waitForRows(page, "producers", isProducer("waiting"), "the producer is not listed waiting");
  const row = waiting.find((r) => r[0] === "site/a");
  if (row[1] !== profile) fail("the profile shows as " + JSON.stringify(row[1]));
  if (await page.$("#producers tbody b")) fail("the profile's markup became an element");
  const conns = await api(node, "GET", "/api/v1/connections");
  const announcer = conns.find((c) => c.client_id === "fogline announce");
  if (!announcer || row[3] !== String(announcer.id)) {
    fail(`the producer's connection shows as ${row[3]}, not the announcer's: ${JSON.stringify(conns)}`);
  }

  const sub = spawn(bin, ["sub", "-s", node.native, "--profile", "sensor=li*", "site/#"], { stdio: "ignore" });
  children.push(sub);
  await waitForRows(page, "producers", isProducer("sending"), "the producer is not sending with an interest");
  const interests = await waitForRows(page, "interests",
    (rows) => rows.some((r) => r[0] === "site/#" && r[1] === "sensor=li*" && r[2] !== "-"), "the interest is not listed");
  const counts = await page.textContent("#rendezvous-counts");
  if (counts !== "interests: 1, producers waiting: 0, sending: 1") fail("the panel counts " + counts);

  sub.kill("SIGINT");
  await exited(sub);
  await waitForRows(page, "producers", isProducer("waiting"), "the producer is not waiting once the interest went");
  await waitForRows(page, "interests", isEmpty, "the interest stays listed once its subscriber went");
  announce.kill("SIGINT");
  await exited(announce);
  await waitForRows(page, "producers", isEmpty, "the producer stays listed once it went");
  return { producer: row, interest: interests.find((r) => r[0] === "site/#"), counts };
}

// Hidden on the first node (no bridges); a node whose Kafka bridge points at a closed port
// shows it down with the error the REST API reports.
async function checkBridges(page) {
  if (!(await page.$eval("#panel-bridges", (e) => e.hidden))) fail("#panel-bridges is shown on a node without bridges");
  const config = join(dir, "bridge.toml");
  writeFileSync(config, '[[bridge.kafka]]\nname = "core"\nbootstrap = ["127.0.0.1:1"]\nstream = "default"\n');
  const other = await startNode("data3", ["--config", config]);
  await page.goto("http://" + other.http + "/");
  await page.waitForSelector("#panel-bridges:not([hidden])", { timeout: 15000 });
  const isDown = (rows) => rows.some((r) => r[0] === "core" && r[2] === "down" && r[8] !== "");
  const rows = await waitForRows(page, "bridges", isDown, "the bridge is not listed down with its error");
  const row = rows.find((r) => r[0] === "core");
  const rest = await api(other, "GET", "/api/v1/bridges/core");
  if (row[1] !== "kafka_out") fail("the bridge's kind shows as " + row[1]);
  if (!rest.last_error || row[8] !== rest.last_error) {
    fail(`the panel's error ${JSON.stringify(row[8])} is not the API's ${JSON.stringify(rest.last_error)}`);
  }
  if (Number(row[7].replace(/,/g, "")) < 1) fail("no error counted: " + row[7]);
  const cls = await page.$eval("#bridges tbody tr", (tr) => tr.className);
  if (cls !== "bridge-down") fail("the row's class is " + cls);
  return row;
}

// The components table says how each listener is protected; a node that admits no
// anonymous clients asks the browser to log in, and shows its listeners as password-protected.
async function checkSecurity(browser, page) {
  const open = await page.$$eval("#components tbody tr td:nth-child(3)", (tds) => tds.map((t) => t.textContent).join(" "));
  if (!/native 127\.0\.0\.1:\d+ \(open\)/.test(open)) fail("the components table does not say the native listener is open: " + open);
  const passwd = join(dir, "passwd");
  execFileSync(bin, ["passwd", "-c", "-b", passwd, "ops", "ops-pw"]);
  const config = join(dir, "auth.toml");
  writeFileSync(config, `[auth]\npassword_file = ${JSON.stringify(passwd)}\n`);
  const guarded = await startNode("data-auth", ["--config", config]);
  const anonymous = await fetch("http://" + guarded.http + "/api/v1/node");
  if (anonymous.status !== 401) fail("an anonymous request got " + anonymous.status);
  const context = await browser.newContext({ httpCredentials: { username: "ops", password: "ops-pw" } });
  const logged = await context.newPage();
  await logged.goto("http://" + guarded.http + "/");
  await logged.waitForSelector("#components tbody tr", { timeout: 15000 });
  const cells = await logged.$$eval("#components tbody tr td:nth-child(3)", (tds) => tds.map((t) => t.textContent).join(" "));
  if (!/native 127\.0\.0\.1:\d+ \(password\)/.test(cells)) fail("the guarded node's listeners are not shown as password-protected: " + cells);
  await context.close();
  return cells.match(/native \S+ \(\w+\)/)[0];
}

// A node without the rules component: the panels stay hidden.
async function checkNoRules(page) {
  const config = join(dir, "no-rules.toml");
  writeFileSync(config, "[rules]\nenabled = false\n");
  const other = await startNode("data2", ["--config", config]);
  await page.goto("http://" + other.http + "/");
  await page.waitForSelector("#components tbody tr", { timeout: 15000 });
  for (const id of ["panel-rules", "panel-alerts"]) {
    if (!(await page.$eval("#" + id, (e) => e.hidden))) fail(`#${id} is shown on a node without rules`);
  }
}

async function main() {
  const node = await startNode();
  execFileSync(bin, ["stream", "add", "lab", "--subjects", "lab/#", "--server", node.native]);

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("requestfailed", (r) => {
    // The live feeds are cut when the page closes; anything else failing is an error.
    const path = new URL(r.url()).pathname;
    if (path !== "/api/v1/events" && path !== "/api/v1/subscribe") errors.push("request failed: " + r.url());
  });

  await page.goto("http://" + node.http + "/");
  await page.waitForSelector("#streams tbody tr", { timeout: 15000 });
  const streams = await page.$$eval("#streams tbody tr td:first-child", (tds) => tds.map((t) => t.textContent));
  for (const name of ["default", "lab"]) {
    if (!streams.includes(name)) fail("the streams table lacks " + name + ": " + JSON.stringify(streams));
  }
  // A rate needs two snapshots.
  await page.waitForFunction(() => document.getElementById("rate-in").textContent !== "-", null, { timeout: 15000 });
  const before = numberIn(await page.textContent("#rate-in"));

  const publisher = spawn(bin, ["pub", "lab/r1/temp", "--count", "40000", "--size", "64", "--rate", "8000",
    "--server", node.native], { stdio: "ignore" });
  children.push(publisher);
  let after = before;
  const deadline = Date.now() + 20000;
  while (!(after > before && after > 100) && Date.now() < deadline) {
    await page.waitForTimeout(500);
    after = numberIn(await page.textContent("#rate-in"));
  }
  if (!(after > before && after > 100)) fail(`the ingest rate did not move: ${before} -> ${after}`);
  // The chart drew the rise, and the stream's count shows in the table.
  const points = await page.getAttribute("#chart polyline.in", "points");
  if (!points || points.split(" ").length < 2) fail("the chart has no line: " + points);
  await page.waitForFunction(() => {
    const row = [...document.querySelectorAll("#streams tbody tr")].find((r) => r.cells[0].textContent === "lab");
    return row && row.cells[3].textContent !== "0";
  }, null, { timeout: 15000 });
  const health = await page.textContent("#health");
  if (health !== "healthy") fail("health badge says " + health);
  const rules = await checkRules(page, node);
  const rendezvous = await checkRendezvous(page, node);
  const bridge = await checkBridges(page);
  const security = await checkSecurity(browser, page);
  await checkNoRules(page);
  if (errors.length) fail("console errors: " + JSON.stringify(errors));
  // SCREENSHOT=file.png keeps a picture of the page, for a human to look at.
  if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
  await browser.close();
  console.log(`OK: streams ${JSON.stringify(streams)}, ingest rate ${before} -> ${after} records/s`);
  console.log(`OK: rules panel ${rules.counts.join(" -> ")} records in, states ${rules.states.join(" -> ")}; alert ${rules.alert}`);
  console.log(`OK: interests and producers panel: producer ${JSON.stringify(rendezvous.producer)} waiting -> ` +
    `sending -> waiting; interest ${JSON.stringify(rendezvous.interest)}; ${rendezvous.counts}`);
  console.log(`OK: bridges panel: ${JSON.stringify(bridge)}`);
  console.log(`OK: listener security shown: open, then ${security} behind a password`);
  cleanup();
}

main().catch((e) => fail(e.stack || String(e)));
