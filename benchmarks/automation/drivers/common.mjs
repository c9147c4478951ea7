// Shared pieces of the Node drivers: argument parsing, run ids, the JSON line each run prints, and
// killing every browser process group the driver started, on exit or on a signal.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
export const FIREFOX = process.env.FIREFOX || "/usr/bin/firefox-esr";
// The machine has no network beyond the page's server; these keep the browser from trying.
export const QUIET = [
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];
export const READY_MS = 15000;
export const DONE_MS = 15000;
export const RUNS_PER_BROWSER = 25;

export function parseArgs(argv, extra = {}) {
  const args = { url: null, tool: null, runs: 1, start: 0, ...extra };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const take = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--url") args.url = take().replace(/\/+$/, "");
    else if (a === "--tool") args.tool = take();
    else if (a === "--runs") args.runs = Number(take());
    else if (a === "--start") args.start = Number(take());
    else if (a === "--headed") args.headed = true;
    else if (a === "--user-agent") args.userAgent = take();
    else if (a === "-h" || a === "--help") usage();
    else usage(`unknown argument ${a}`);
  }
  if (!args.url || !args.tool || !(args.runs >= 1)) usage("--url, --tool and --runs are required");
  return args;
}

function usage(message) {
  if (message) process.stderr.write(message + "\n");
  process.stderr.write("usage: --url BASE --tool NAME --runs N [--start I]\n");
  process.exit(2);
}

export const runId = (tool, i) => `${tool}:${i}`;
export const runUrl = (base, tool, i, auto = false) =>
  `${base}/?run=${encodeURIComponent(runId(tool, i))}${auto ? "&auto=1" : ""}`;
export const account = (i) => `user${i}@example.com`;
export const password = (i) => `correct horse ${i}`;

export function report(tool, run, ok, error, ms) {
  const line = { tool, run, ok, error: error ? String(error).split("\n")[0].slice(0, 300) : null, ms };
  process.stdout.write(JSON.stringify(line) + "\n");
}

// Process groups (negative pids) to kill when the driver stops, however it stops.
const groups = new Set();
export const track = (pid) => pid && groups.add(pid);
export const untrack = (pid) => groups.delete(pid);
export function killGroup(pid) {
  if (!pid) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  groups.delete(pid);
}
// Profile folders made for the browsers, removed when their browser is gone or the driver stops.
const dirs = new Set();
export function tempDir(prefix) {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(d);
  return d;
}
export function removeDir(d) {
  if (!d) return;
  rmSync(d, { recursive: true, force: true });
  dirs.delete(d);
}
export function killAll() {
  for (const pid of [...groups]) killGroup(pid);
  for (const d of [...dirs]) removeDir(d);
}

let installed = false;
export function killOnExit() {
  if (installed) return;
  installed = true;
  process.on("exit", killAll);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"])
    process.on(sig, () => {
      killAll();
      process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 })[sig]);
    });
  process.on("uncaughtException", (e) => {
    process.stderr.write(`uncaught: ${e && e.stack}\n`);
    killAll();
    process.exit(1);
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: timeout after ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}
