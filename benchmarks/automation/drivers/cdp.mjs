#!/usr/bin/env node
// Drives the benchmark page with the libraries people automate browsers with, used the way their docs show:
//   playwright         playwright-core, Chromium, default (headless) launch; locator.fill, then Enter
//   puppeteer          puppeteer-core, Chromium, headless: true; page.type, then click #submit
//   puppeteer-stealth  puppeteer-extra + puppeteer-extra-plugin-stealth over puppeteer-core, headless: true
//   firefox-headless   puppeteer-core, Firefox ESR over WebDriver BiDi, headless: true
// Each run gets a new browser context (incognito-like); one browser process serves up to 25 runs.
//
//   node drivers/cdp.mjs --url BASE --tool NAME --runs N [--start I] [--headed]
//
// --headed starts the browser with a window (needs DISPLAY, e.g. under Xvfb). One JSON line per run on stdout:
// {"tool","run","ok","error","ms"}.
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import {
  CHROMIUM, FIREFOX, QUIET, READY_MS, DONE_MS, RUNS_PER_BROWSER,
  parseArgs, runUrl, account, password, report, track, killGroup, killOnExit, withTimeout, tempDir, removeDir,
} from "./common.mjs";

const require = createRequire(import.meta.url);
const TOOLS = ["playwright", "puppeteer", "puppeteer-stealth", "firefox-headless"];

const args = parseArgs(process.argv.slice(2));
if (!TOOLS.includes(args.tool)) {
  process.stderr.write(`cdp.mjs drives ${TOOLS.join(", ")}; not ${args.tool}\n`);
  process.exit(2);
}
killOnExit();

// Every browser this driver starts runs in its own process group (both libraries launch detached on Linux);
// the groups are the node process's direct children, tracked right after each launch.
function trackChildren() {
  const out = spawnSync("ps", ["-o", "pid=", "--ppid", String(process.pid)], { encoding: "utf8" });
  const pids = (out.stdout || "").split(/\s+/).filter(Boolean).map(Number).filter((p) => p !== out.pid);
  pids.forEach(track);
  return pids;
}

async function launch(tool) {
  const headless = !args.headed;
  if (tool === "playwright") {
    const { chromium } = require("playwright-core");
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless, args: ["--no-sandbox", ...QUIET] });
    return { kind: "playwright", browser, pids: trackChildren() };
  }
  if (tool === "firefox-headless") {
    const puppeteer = require("puppeteer-core");
    const userDataDir = tempDir("firefox-profile-");
    const browser = await puppeteer.launch({ browser: "firefox", executablePath: FIREFOX, headless, userDataDir });
    return { kind: "puppeteer", browser, pids: trackChildren(), dir: userDataDir };
  }
  let puppeteer = require("puppeteer-core");
  if (tool === "puppeteer-stealth") {
    const { addExtra } = require("puppeteer-extra");
    const Stealth = require("puppeteer-extra-plugin-stealth");
    puppeteer = addExtra(puppeteer);
    puppeteer.use(Stealth());
  }
  // Puppeteer's own temporary profile, but made here so that it goes even when the browser is killed.
  const userDataDir = tempDir("chromium-profile-");
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless, userDataDir, args: ["--no-sandbox", ...QUIET] });
  return { kind: "puppeteer", browser, pids: trackChildren(), dir: userDataDir };
}

async function close(b) {
  if (!b) return;
  try {
    await withTimeout(b.browser.close(), 10000, "browser.close");
  } catch {}
  b.pids.forEach(killGroup);
  removeDir(b.dir);
}

const waitState = (state) => (s) => document.body && document.body.dataset.state === s;

async function runPlaywright(b, i) {
  const context = await b.browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(runUrl(args.url, args.tool, i), { timeout: READY_MS });
    await page.waitForFunction(waitState(), "ready", { timeout: READY_MS });
    await page.locator("#account").fill(account(i));
    await page.locator("#password").fill(password(i));
    await page.locator("#password").press("Enter");
    await page.waitForFunction(waitState(), "done", { timeout: DONE_MS });
  } finally {
    await context.close().catch(() => {});
  }
}

async function runPuppeteer(b, i) {
  const context = await b.browser.createBrowserContext();
  try {
    const page = await context.newPage();
    await page.goto(runUrl(args.url, args.tool, i), { timeout: READY_MS });
    await page.waitForFunction(waitState(), { timeout: READY_MS }, "ready");
    await page.type("#account", account(i));
    await page.type("#password", password(i));
    await page.click("#submit");
    await page.waitForFunction(waitState(), { timeout: DONE_MS }, "done");
  } finally {
    await context.close().catch(() => {});
  }
}

let b = null;
let failures = 0;
for (let n = 0; n < args.runs; n++) {
  const i = args.start + n;
  const t0 = Date.now();
  try {
    if (!b || n % RUNS_PER_BROWSER === 0) {
      await close(b);
      b = null;
      b = await withTimeout(launch(args.tool), 60000, "launch");
    }
    const run = b.kind === "playwright" ? runPlaywright : runPuppeteer;
    await withTimeout(run(b, i), READY_MS + DONE_MS + 15000, "run");
    report(args.tool, i, true, null, Date.now() - t0);
  } catch (e) {
    failures++;
    report(args.tool, i, false, e && e.message ? e.message : e, Date.now() - t0);
    // A browser that failed a run is not trusted for the next one.
    await close(b);
    b = null;
  }
}
await close(b);
process.exit(failures === args.runs ? 1 : 0);
