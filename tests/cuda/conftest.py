"""GPU test runs: with ``EMBER_FAILURE_LOG=path`` each failure's test id and last error line
is appended to ``path`` as it happens (a run cut short by a time limit still tells what
failed)."""

from __future__ import annotations

import os


def pytest_runtest_logreport(report):
    path = os.environ.get("EMBER_FAILURE_LOG")
    if not path or not report.failed:
        return
    text = str(report.longrepr).strip().splitlines()
    errors = [ln for ln in text if ln.startswith("E ")]
    line = (errors[0] if errors else text[-1] if text else "?")[:300]
    with open(path, "a") as f:
        f.write(f"{report.nodeid} [{report.when}]: {line}\n")
