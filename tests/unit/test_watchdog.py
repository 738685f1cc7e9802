"""The build stops a page whose kernel makes no progress, and never one that is working (sinkframes_build.watchdog)."""

from __future__ import annotations

import subprocess
import sys

from sinkframes_build import watchdog


def test_a_child_that_waits_on_nothing_is_stopped():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with watchdog.stall_watchdog(limit=1.0, poll=0.25) as watch:
            code = child.wait(timeout=30)  # killed by the watchdog long before its sleep ends
        assert watch.fired and watch.idle_seconds >= 1.0 and code != 0
    finally:
        child.kill()


def test_a_child_that_computes_is_left_alone():
    # four seconds of arithmetic against a one-second stall limit: its CPU time grows at every look
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nend = time.process_time() + 4\nwhile time.process_time() < end: pass"])
    try:
        with watchdog.stall_watchdog(limit=1.0, poll=0.25) as watch:
            code = child.wait(timeout=60)
        assert not watch.fired and code == 0
    finally:
        child.kill()


def test_nothing_is_stopped_without_children():
    with watchdog.stall_watchdog(limit=0.5, poll=0.1) as watch:
        pass
    assert not watch.fired
