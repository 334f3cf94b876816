// The dashboard in a real headless browser: Debian's chromium, driven by playwright-core.
//
//   node tests/browser/dashboard.test.mjs target/debug/fogline
//
// Starts `fogline serve` on ephemeral ports, creates a second stream with the CLI, opens the
// dashboard, and checks that the page loads without console errors, lists the node's
// streams, and that its ingest rate moves after records are published. Exits 0 on success.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
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
function startNode() {
  const node = spawn(bin, ["serve", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0",
    "--mqtt", "127.0.0.1:0", "--http", "127.0.0.1:0"], { stdio: ["ignore", "ignore", "pipe"] });
  children.push(node);
  return new Promise((resolve, reject) => {
    const found = {};
    const lines = createInterface({ input: node.stderr });
    lines.on("line", (line) => {
      const native = line.match(/^ {2}native protocol +(\S+)/);
      const http = line.match(/^ {2}dashboard +http:\/\/(\S+?)\//);
      if (native) found.native = native[1];
      if (http) found.http = http[1];
      if (found.native && found.http && !found.done) {
        found.done = true;
        resolve(found);
      }
    });
    node.on("exit", (code) => reject(new Error("fogline serve exited with " + code)));
    setTimeout(() => reject(new Error("no banner within 20 s")), 20000);
  });
}

function numberIn(text) {
  // "12.3 k" -> 12300, "1.25 M" -> 1250000, "-" -> NaN
  const m = text.trim().match(/^([\d.]+)\s*([kM]?)/);
  if (!m) return NaN;
  return Number(m[1]) * (m[2] === "k" ? 1e3 : m[2] === "M" ? 1e6 : 1);
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
    // The live feed is cut when the page closes; anything else failing is an error.
    if (!r.url().endsWith("/api/v1/events")) errors.push("request failed: " + r.url());
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
  if (errors.length) fail("console errors: " + JSON.stringify(errors));
  await browser.close();
  console.log(`OK: streams ${JSON.stringify(streams)}, ingest rate ${before} -> ${after} records/s`);
  cleanup();
}

main().catch((e) => fail(e.stack || String(e)));
