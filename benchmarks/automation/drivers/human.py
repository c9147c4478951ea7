#!/usr/bin/env python3
"""The human side: a headful Chromium or Firefox ESR on its own Xvfb display, started the way a person
starts it (no automation, headless or remote-debugging flag, no WebDriver, no DevTools client) and used
only through X11 input (xdotool): mouse moves in steps, a click into the account field, typing with a
delay, Tab, the password, Return. The page is read only through the window title.

    python3 drivers/human.py --url BASE --tool human-chromium|human-firefox --runs N [--start I]
        [--sizes 1280x800,1920x1080,1366x768,1024x768] [--langs en-US,de-DE,fr-FR,ja-JP] [--batch 25]

Runs are split into batches of --batch; batch k gets its own Xvfb, window size sizes[k % len] and language
langs[k % len], and a fresh profile directory that persists across that batch's runs. The first run's URL is
given on the command line, each later one typed into the address bar (ctrl+L).

Page contract used here: the page sets document.title to "ready <runid>" when it is ready and to
"done <runid>" when the sign-in's answer arrived; the account field's centre is at (--field-x, --field-y)
CSS pixels from the viewport's top-left corner, the password field follows it in tab order.
One JSON line per run on stdout: {"tool","run","ok","error","ms"}.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

import common  # noqa: E402  (beside this file)
from common import CHROMIUM, FIREFOX, QUIET  # noqa: E402
# Where the page's viewport starts inside the browser window, measured from screenshots of these builds
# (Chromium 156, Firefox ESR 153) under Xvfb with no window manager: Chromium's tab strip, toolbar and the
# infobar it shows for --no-sandbox; Firefox's tab strip and toolbar.
VIEWPORT_TOP = {"human-chromium": 144, "human-firefox": 85}
READY_S = 15
DONE_S = 15
# A profile that was used before: first-run pages and notices already dismissed, and the network features
# that only time out on this machine switched off. Nothing here concerns automation.
FIREFOX_PREFS = {
    "browser.aboutwelcome.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "datareporting.policy.firstRunURL": "",
    "datareporting.policy.dataSubmissionPolicyBypassNotification": True,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "app.update.auto": False,
}

def spawn(argv, env=None, **kw):
    p = subprocess.Popen(argv, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=kw.pop("stdout", subprocess.DEVNULL), stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
    common.groups.add(p.pid)
    return p


def kill(p):
    if p is None:
        return
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    common.groups.discard(p.pid)
    try:
        p.wait(5)
    except Exception:
        pass


def start_xvfb(width, height):
    """Xvfb picks a free display itself (-displayfd) and writes its number to the pipe."""
    r, w = os.pipe()
    p = spawn(["Xvfb", "-displayfd", str(w), "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp"], pass_fds=(w,))
    os.close(w)
    data = b""
    deadline = time.monotonic() + 10
    while not data.endswith(b"\n") and time.monotonic() < deadline:
        chunk = os.read(r, 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    if not data.strip():
        kill(p)
        raise RuntimeError("Xvfb did not start")
    return p, ":" + data.decode().strip()


class X:
    """xdotool on one display."""

    def __init__(self, display):
        self.env = dict(os.environ, DISPLAY=display)

    def run(self, *args, timeout=20, check=True):
        r = subprocess.run(["xdotool", *map(str, args)], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"xdotool {' '.join(map(str, args))}: {r.stderr.strip()}")
        return r.stdout.strip()

    def title(self, wid):
        return self.run("getwindowname", wid, check=False)

    def geometry(self, wid):
        out = self.run("getwindowgeometry", "--shell", wid)
        g = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return int(g["X"]), int(g["Y"]), int(g["WIDTH"]), int(g["HEIGHT"])

    def mouse(self):
        out = self.run("getmouselocation", "--shell")
        g = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        return int(g["X"]), int(g["Y"])

    def glide(self, x, y):
        """Move the pointer in several eased steps along a slightly bent line, as a hand does."""
        x0, y0 = self.mouse()
        steps = random.randint(8, 16)
        bend_x, bend_y = random.uniform(-40, 40), random.uniform(-30, 30)
        for k in range(1, steps + 1):
            t = k / steps
            e = t * t * (3 - 2 * t)
            arc = 4 * t * (1 - t)
            px = x0 + (x - x0) * e + bend_x * arc + random.uniform(-1.5, 1.5)
            py = y0 + (y - y0) * e + bend_y * arc + random.uniform(-1.5, 1.5)
            self.run("mousemove", int(px), int(py))
            time.sleep(random.uniform(0.012, 0.035))
        self.run("mousemove", int(x), int(y))


def find_window(x, cls, timeout=30):
    """The browser's main window: the largest visible window of its class."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = x.run("search", "--onlyvisible", "--class", cls, check=False)
        best = None
        for wid in out.split():
            try:
                g = x.geometry(wid)
            except Exception:
                continue
            if best is None or g[2] * g[3] > best[1]:
                best = (wid, g[2] * g[3])
        if best and best[1] > 200 * 200:
            return best[0]
        time.sleep(0.2)
    raise RuntimeError(f"no {cls} window after {timeout} s")


def wait_title(x, wid, pattern, timeout):
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        last = x.title(wid)
        if re.search(pattern, last):
            return last
        time.sleep(0.1)
    raise RuntimeError(f"title {last!r} never matched {pattern!r}")


def start_browser(tool, display, width, height, lang, url):
    profile = tempfile.mkdtemp(prefix=f"{tool}-profile-")
    common.folders.add(profile)
    posix = lang.replace("-", "_") + ".UTF-8"
    env = dict(os.environ, DISPLAY=display, LANG=posix, LANGUAGE=lang.replace("-", "_"), LC_ALL=posix)
    if tool == "human-chromium":
        argv = [CHROMIUM, "--no-sandbox", f"--user-data-dir={profile}", *QUIET,
                f"--window-size={width},{height}", f"--lang={lang}", url]
        cls = "chromium"
    else:
        with open(os.path.join(profile, "user.js"), "w") as f:
            for k, v in FIREFOX_PREFS.items():
                f.write(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n")
        argv = [FIREFOX, "--profile", profile, "--new-instance", url]
        cls = "firefox"
    p = spawn(argv, env=env)
    x = X(display)
    wid = find_window(x, cls)
    # What a window manager or the person does: the window at the screen's corner, at the screen's size.
    x.run("windowmove", wid, 0, 0, check=False)
    if tool == "human-firefox":
        x.run("windowsize", wid, width, height, check=False)
    time.sleep(0.5)
    return p, x, wid, argv


def one_run(x, wid, tool, rid, i, args, first):
    if not first:
        # Dismiss whatever bubble the last sign-in left open, then type the next address.
        x.run("key", "Escape")
        time.sleep(random.uniform(0.2, 0.4))
        x.run("key", "ctrl+l")
        time.sleep(random.uniform(0.2, 0.4))
        x.run("type", "--delay", random.randint(20, 45), f"{args.url}/?run={rid}")
        time.sleep(random.uniform(0.1, 0.3))
        x.run("key", "Return")
    wait_title(x, wid, r"^ready " + re.escape(rid) + r"\b", READY_S)
    time.sleep(random.uniform(0.3, 0.8))
    wx, wy, ww, wh = x.geometry(wid)
    top = VIEWPORT_TOP[tool] if args.viewport_top is None else args.viewport_top
    # Wander over the page, then into the account field.
    for _ in range(random.randint(2, 3)):
        x.glide(wx + random.randint(200, max(201, ww - 100)), wy + top + random.randint(80, max(81, wh - top - 60)))
        time.sleep(random.uniform(0.05, 0.25))
    fx = wx + args.field_x + random.randint(-50, 50)
    fy = wy + top + args.field_y + random.randint(-5, 5)
    x.glide(fx, fy)
    time.sleep(random.uniform(0.1, 0.3))
    x.run("click", 1)
    time.sleep(random.uniform(0.2, 0.5))
    x.run("type", "--delay", 60, f"user{i}@example.com")
    time.sleep(random.uniform(0.2, 0.5))
    x.run("key", "Tab")
    time.sleep(random.uniform(0.2, 0.4))
    x.run("type", "--delay", 60, f"correct horse {i}")
    time.sleep(random.uniform(0.2, 0.5))
    x.run("key", "Return")
    wait_title(x, wid, r"^done " + re.escape(rid) + r"\b", DONE_S)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--tool", required=True, choices=["human-chromium", "human-firefox"])
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--sizes", default="1280x800,1920x1080,1366x768,1024x768")
    p.add_argument("--langs", default="en-US,de-DE,fr-FR,ja-JP")
    p.add_argument("--batch", type=int, default=25, help="runs per browser start (and per size/language)")
    p.add_argument("--field-x", type=int, default=160, help="account field centre, CSS px from the viewport's left")
    p.add_argument("--field-y", type=int, default=25, help="account field centre, CSS px from the viewport's top")
    p.add_argument("--viewport-top", type=int, default=None, help="override the measured toolbar height")
    p.add_argument("--screenshots", default=None, help="folder for a screenshot after each run (debugging)")
    p.add_argument("--verbose", action="store_true", help="print each browser command line on stderr")
    args = p.parse_args()
    args.url = args.url.rstrip("/")
    sizes = [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")]
    langs = args.langs.split(",")

    failures = 0
    n = 0
    batch = 0
    while n < args.runs:
        width, height = sizes[batch % len(sizes)]
        lang = langs[batch % len(langs)]
        count = min(args.batch, args.runs - n)
        xvfb = browser = None
        first = True
        try:
            xvfb, display = start_xvfb(width, height)
            i = args.start + n
            rid = f"{args.tool}:{i}"
            browser, x, wid, argv = start_browser(args.tool, display, width, height, lang, f"{args.url}/?run={rid}")
            if args.verbose:
                print(f"[{args.tool} batch {batch}] DISPLAY={display} LANG={lang} {' '.join(argv)}", file=sys.stderr)
        except Exception as e:  # noqa: BLE001
            kill(browser)
            kill(xvfb)
            for k in range(count):
                failures += 1
                print(json.dumps({"tool": args.tool, "run": args.start + n + k, "ok": False,
                                  "error": f"start: {e}"[:300], "ms": 0}, separators=(",", ":")), flush=True)
            n += count
            batch += 1
            continue
        for k in range(count):
            i = args.start + n + k
            rid = f"{args.tool}:{i}"
            t0 = time.monotonic()
            error = None
            try:
                one_run(x, wid, args.tool, rid, i, args, first)
            except Exception as e:  # noqa: BLE001
                error = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
                failures += 1
            first = False
            if args.screenshots:
                os.makedirs(args.screenshots, exist_ok=True)
                subprocess.run(["import", "-window", "root", os.path.join(args.screenshots, f"{args.tool}-{i}.png")],
                               env=x.env, capture_output=True, timeout=20)
            print(json.dumps({"tool": args.tool, "run": i, "ok": error is None, "error": error,
                              "ms": int((time.monotonic() - t0) * 1000)}, separators=(",", ":")), flush=True)
        kill(browser)
        kill(xvfb)
        common.cleanup()
        n += count
        batch += 1
    return 1 if failures == args.runs else 0


if __name__ == "__main__":
    sys.exit(main())
