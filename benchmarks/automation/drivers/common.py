"""What the Python drivers share (as common.mjs for the Node ones): the browsers' paths, the flags that keep
Chromium off the network, and the clean-up of what a driver started on every exit path: the process groups it
spawned (each browser, or ChromeDriver with its browser, runs in a group of its own) are killed and the
profile folders it made are removed, on a normal exit, on an exception and on SIGINT, SIGTERM or SIGHUP."""
import atexit
import os
import shutil
import signal
import sys

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FIREFOX = os.environ.get("FIREFOX", "/usr/bin/firefox-esr")
# This machine's network is closed: without these Chromium keeps trying to reach Google's services.
QUIET = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

groups = set()
folders = set()


def cleanup():
    for pgid in list(groups):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        groups.discard(pgid)
    for folder in list(folders):
        shutil.rmtree(folder, ignore_errors=True)
        folders.discard(folder)


def _on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


atexit.register(cleanup)
for _signal in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(_signal, _on_signal)
