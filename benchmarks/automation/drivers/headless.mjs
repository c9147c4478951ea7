#!/usr/bin/env node
// Plain headless Chromium, no DevTools client and no driver: each run is one browser process that loads
// BASE/?run=ID&auto=1 (the page fills and submits its form by script when it sees auto=1) and dumps the DOM
// once the virtual time budget is spent; the run passed when the dumped body says data-state="done".
//   headless-new                        chromium --headless=new
//   headless-old                        chromium-headless-shell (Debian package chromium-headless-shell); from
//                                       Chrome 132 on `chromium --headless=old` is the new mode under another name
//   headless-desktop-ua                 headless-new with the headful browser's user agent (Chrome/, not HeadlessChrome/)
//   headless-no-automation-controlled   headless-desktop-ua plus --disable-blink-features=AutomationControlled
//
//   node drivers/headless.mjs --url BASE --tool NAME --runs N [--start I] [--user-agent UA]
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { CHROMIUM, QUIET, parseArgs, runUrl, report, track, killGroup, killOnExit, tempDir, removeDir } from "./common.mjs";

const TOOLS = ["headless-new", "headless-old", "headless-desktop-ua", "headless-no-automation-controlled"];
const SHELL = process.env.CHROMIUM_HEADLESS_SHELL || "/usr/bin/chromium-headless-shell";
const BUDGET_MS = Number(process.env.VIRTUAL_TIME_BUDGET_MS || 5000);
const RUN_MS = 30000;

const args = parseArgs(process.argv.slice(2));
if (!TOOLS.includes(args.tool)) {
  process.stderr.write(`headless.mjs drives ${TOOLS.join(", ")}; not ${args.tool}\n`);
  process.exit(2);
}
killOnExit();

// The user agent the same Chromium sends with a window: the reduced UA string with Chrome/<major>.0.0.0.
function desktopUserAgent() {
  const v = spawnSync(CHROMIUM, ["--version"], { encoding: "utf8" }).stdout || "";
  const major = (v.match(/(\d+)\.\d+\.\d+\.\d+/) || [])[1];
  if (!major) throw new Error(`cannot read the version of ${CHROMIUM}: ${v}`);
  return `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;
}

function command(tool, profile, url) {
  const common = ["--no-sandbox", ...QUIET, `--user-data-dir=${profile}`, `--virtual-time-budget=${BUDGET_MS}`, "--dump-dom"];
  if (tool === "headless-old") {
    if (existsSync(SHELL)) return [SHELL, [...common, url]];
    process.stderr.write(`${SHELL} is missing (apt-get install chromium-headless-shell); --headless=old stands in\n`);
    return [CHROMIUM, ["--headless=old", ...common, url]];
  }
  const extra = [];
  if (tool === "headless-desktop-ua" || tool === "headless-no-automation-controlled")
    extra.push(`--user-agent=${args.userAgent || desktopUserAgent()}`);
  if (tool === "headless-no-automation-controlled") extra.push("--disable-blink-features=AutomationControlled");
  return [CHROMIUM, ["--headless=new", ...extra, ...common, url]];
}

function runOnce(i) {
  return new Promise((resolve) => {
    const profile = tempDir("headless-profile-");
    const [bin, argv] = command(args.tool, profile, runUrl(args.url, args.tool, i, true));
    const child = spawn(bin, argv, { detached: true, stdio: ["ignore", "pipe", "ignore"] });
    track(child.pid);
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const timer = setTimeout(() => killGroup(child.pid), RUN_MS);
    const finish = (error) => {
      clearTimeout(timer);
      killGroup(child.pid); // and the browser's child processes
      removeDir(profile);
      resolve(error);
    };
    child.on("error", (e) => finish(e.message));
    child.on("exit", (code, signal) => {
      const body = (out.match(/<body[^>]*>/) || [""])[0];
      if (/data-state="done"/.test(body)) finish(null);
      else finish(`state ${(body.match(/data-state="([^"]*)"/) || [, "unknown"])[1]} (exit ${code ?? signal})`);
    });
  });
}

let failures = 0;
for (let n = 0; n < args.runs; n++) {
  const i = args.start + n;
  const t0 = Date.now();
  const error = await runOnce(i);
  if (error) failures++;
  report(args.tool, i, !error, error, Date.now() - t0);
}
process.exit(failures === args.runs ? 1 : 0);
