// The status page of a live `coremcp serve` (started by ./run with one relay down and one
// upstream server crash-looping), in headless Chromium through puppeteer-core.
//
// Usage: CHROMIUM=/usr/bin/chromium MCP_CONFIG=FILE SCREENSHOT=FILE node page.test.mjs BASE_URL
//
// Every wait has a deadline (puppeteer's `timeout`); a failed check exits 1 with what was on
// the page.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";

const base = process.argv[2];
const { CHROMIUM, MCP_CONFIG, SCREENSHOT } = process.env;
const WAIT = 15000;

function step(text) {
  console.log(`-- ${text}`);
}

async function mcp(body, session) {
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  if (session) headers["mcp-session-id"] = session;
  const reply = await fetch(`${base}/mcp`, { method: "POST", headers, body: JSON.stringify(body) });
  return { reply, text: await reply.text() };
}

/// A forwarded call, which finds the relay down and marks it so.
async function callThroughTheRelay() {
  const init = await mcp({
    jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "browser-test", version: "0" } },
  });
  assert.equal(init.reply.status, 200, init.text);
  const session = init.reply.headers.get("mcp-session-id");
  await mcp({ jsonrpc: "2.0", method: "notifications/initialized" }, session);
  const call = await mcp({
    jsonrpc: "2.0", id: 2, method: "tools/call",
    params: { name: "notepad_get", arguments: { scope: "global", key: "k" } },
  }, session);
  assert.match(call.text, /relay/, call.text);
  const echo = await mcp({
    jsonrpc: "2.0", id: 3, method: "tools/call",
    params: { name: "fixture_echo", arguments: { text: "hi" } },
  }, session);
  assert.equal(echo.reply.status, 200, echo.text);
}

/// A page of another origin (its own little server) that POSTs a reload to Core MCP.
async function foreignOrigin() {
  const server = createServer((_, res) => {
    res.setHeader("content-type", "text/html");
    res.end(`<!doctype html><script>
      fetch(${JSON.stringify(base + "/api/mcp/refresh")}, { method: "POST", mode: "no-cors" })
        .finally(() => { document.title = "sent"; });
    </script>`);
  });
  await new Promise((ready) => server.listen(0, "127.0.0.1", ready));
  return { server, url: `http://127.0.0.1:${server.address().port}/` };
}

async function upstreamIds() {
  const status = await (await fetch(`${base}/api/status`)).json();
  return status.upstream.map((u) => u.id);
}

const browser = await puppeteer.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", `--user-data-dir=${mkdtempSync(join(tmpdir(), "coremcp-chromium-"))}`,
  ],
});
let page;
try {
  step("a forwarded call marks the relay down");
  await callThroughTheRelay();

  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  step(`open ${base}/`);
  const response = await page.goto(`${base}/`, { waitUntil: "load", timeout: WAIT });
  assert.equal(response.status(), 200);
  assert.match(response.headers()["content-security-policy"], /connect-src 'self'/);

  step("every section shows the live state");
  await page.waitForFunction(
    () => document.querySelector("#summary").textContent.includes("proxy mode"),
    { timeout: WAIT },
  );
  const text = async (id) => page.$eval(id, (e) => e.textContent);
  assert.match(await text("#groups"), /fixture/);
  assert.match(await text("#groups"), /notepad/);
  // The fixture's row: loaded, with its version, plugin API version and tool count.
  const fixtureRow = await page.$$eval("#groups tr", (rows) => {
    const row = rows.find((r) => r.cells[0].textContent === "fixture");
    return row ? [...row.cells].slice(1, 5).map((c) => c.textContent) : null;
  });
  assert.equal(fixtureRow[0], "loaded");
  assert.match(fixtureRow[1], /^\d+\.\d+\.\d+$/);
  assert.match(fixtureRow[2], /^\d+\.\d+\.\d+$/);
  assert.equal(fixtureRow[3], "7");
  await page.waitForFunction(
    () => /127\.0\.0\.2.*down/s.test(document.querySelector("#relays").textContent),
    { timeout: WAIT },
  );
  const relays = await text("#relays");
  assert.match(relays, /next try in/);
  assert.match(relays, /cannot connect/);
  await page.waitForFunction(
    () => /crashy/.test(document.querySelector("#upstream").textContent)
      && document.querySelector("#upstream").textContent.includes("boom"),
    { timeout: WAIT },
  );
  // Calls per group by outcome: the fixture's call ok, the forwarded one a tool error.
  const callsRow = (group) => page.$$eval("#calls tr", (rows, group) => {
    const row = rows.find((r) => r.cells[0].textContent === group);
    return row ? [...row.cells].slice(1).map((c) => c.textContent) : null;
  }, group);
  await page.waitForFunction(
    () => [...document.querySelectorAll("#calls tr")].some((r) => r.cells[0].textContent === "fixture"),
    { timeout: WAIT },
  );
  assert.deepEqual(await callsRow("fixture"), ["1", "0", "0", "0", "0"]);
  assert.deepEqual(await callsRow("notepad"), ["0", "1", "0", "0", "0"]);
  assert.match(await text("#errors"), /notepad_get/);
  // This server has no Registry group, and the page says so where the targets would be.
  assert.match(await text("#remotes"), /cannot read them: the registry group is not part of this session/);

  step("untrusted text is shown as text");
  const upstream = await text("#upstream");
  assert.ok(upstream.includes("<script>window.pwned = 1</script>"), upstream);
  assert.ok(upstream.includes("<img src=x"), upstream);
  assert.equal(await page.$$eval("#upstream script, #upstream img", (e) => e.length), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);

  step("a POST from another origin does not reload");
  const config = JSON.parse(readFileSync(MCP_CONFIG, "utf8"));
  config.servers.push({ id: "second", command: "sh", args: ["-c", "exit 0"] });
  writeFileSync(MCP_CONFIG, JSON.stringify(config));
  const foreign = await foreignOrigin();
  const other = await browser.newPage();
  await other.goto(foreign.url, { timeout: WAIT });
  await other.waitForFunction(() => document.title === "sent", { timeout: WAIT });
  await other.close();
  foreign.server.close();
  assert.deepEqual(await upstreamIds(), ["crashy"], "the foreign POST changed nothing");

  step("Reload re-reads the configuration and the page shows the change");
  await page.click("#reload");
  await page.waitForFunction(
    () => document.querySelector("#message").textContent.startsWith("Reloaded."),
    { timeout: WAIT },
  );
  assert.match(await text("#message"), /started: [^·]*second/);
  await page.waitForFunction(
    () => document.querySelector("#upstream").textContent.includes("second"),
    { timeout: WAIT },
  );
  assert.deepEqual(errors, [], "no script errors on the page");

  if (SCREENSHOT) {
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  }
  step("the status page passed");
} catch (e) {
  if (page) {
    console.error("---- page text ----\n" + (await page.evaluate(() => document.body.innerText)));
  }
  console.error(e);
  process.exitCode = 1;
} finally {
  await browser.close();
}
