#!/usr/bin/env python3
"""Selenium + ChromeDriver, headless the way Selenium's docs show (options.add_argument("--headless=new")).

    python3 drivers/selenium_run.py --url BASE --tool selenium --runs N [--start I]

The driver and the browser are given by path (/usr/bin/chromedriver, /usr/bin/chromium) and SE_OFFLINE is
set, so Selenium Manager never downloads anything. One session serves up to 25 runs; each run opens a new
window, and its cookies and storage are cleared when it ends. One JSON line per run on stdout:
{"tool","run","ok","error","ms"}.
"""
import argparse
import json
import os
import signal
import shutil
import sys
import tempfile
import time

import common  # noqa: E402  (beside this file)
from common import CHROMIUM, QUIET  # noqa: E402

os.environ["SE_OFFLINE"] = "true"
os.environ.setdefault("SE_AVOID_STATS", "true")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
READY_S = 15
DONE_S = 15
RUNS_PER_BROWSER = 25

def start():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    options.add_argument("--headless=new")
    options.add_argument("--no-sandbox")
    for flag in QUIET:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="selenium-profile-")
    common.folders.add(profile)
    options.add_argument(f"--user-data-dir={profile}")
    service = Service(executable_path=CHROMEDRIVER, popen_kw={"start_new_session": True})
    driver = webdriver.Chrome(service=service, options=options)
    pid = service.process.pid
    common.groups.add(pid)
    return driver, pid, profile


def stop(session):
    if not session:
        return
    driver, pid, profile = session
    try:
        driver.quit()
    except Exception:
        pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    common.groups.discard(pid)
    shutil.rmtree(profile, ignore_errors=True)
    common.folders.discard(profile)


def state_is(value):
    return lambda d: d.execute_script("return document.body && document.body.dataset.state") == value


def run_once(driver, base, tool, i):
    old = driver.current_window_handle
    driver.switch_to.new_window("window")
    driver.switch_to.window(old)
    driver.close()
    driver.switch_to.window(driver.window_handles[-1])
    try:
        run = f"{tool}:{i}"
        driver.get(f"{base}/?run={run}")
        WebDriverWait(driver, READY_S, poll_frequency=0.1).until(state_is("ready"))
        driver.find_element(By.ID, "account").send_keys(f"user{i}@example.com")
        driver.find_element(By.ID, "password").send_keys(f"correct horse {i}")
        driver.find_element(By.ID, "submit").click()
        WebDriverWait(driver, DONE_S, poll_frequency=0.1).until(state_is("done"))
    finally:
        try:
            driver.execute_script("try { localStorage.clear(); sessionStorage.clear(); } catch (e) {}")
            driver.delete_all_cookies()
        except Exception:
            pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--tool", default="selenium")
    p.add_argument("--runs", type=int, required=True)
    p.add_argument("--start", type=int, default=0)
    a = p.parse_args()
    base = a.url.rstrip("/")
    session = None
    failures = 0
    for n in range(a.runs):
        i = a.start + n
        t0 = time.monotonic()
        error = None
        try:
            if session is None or n % RUNS_PER_BROWSER == 0:
                stop(session)
                session = None
                session = start()
            run_once(session[0], base, a.tool, i)
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the batch
            error = (str(e).strip().splitlines() or [type(e).__name__])[0][:300] or type(e).__name__
            failures += 1
            stop(session)
            session = None
        line = {"tool": a.tool, "run": i, "ok": error is None, "error": error, "ms": int((time.monotonic() - t0) * 1000)}
        print(json.dumps(line, separators=(",", ":")), flush=True)
    stop(session)
    return 1 if failures == a.runs else 0


if __name__ == "__main__":
    sys.exit(main())
