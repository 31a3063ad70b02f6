"""A rank's entry point under ``ember.distributed.run``: runs the user's script or module as
``__main__`` and, if it raises, records the exception in ``EMBER_ERROR_FILE`` (JSON) for the
launcher's report before letting it propagate as usual (traceback, exit status 1)."""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback


def _record(exc: BaseException) -> None:
    path = os.environ.get("EMBER_ERROR_FILE")
    if not path:
        return
    info = {"rank": int(os.environ.get("RANK", -1)), "time": time.time(),
            "type": type(exc).__name__, "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))}
    try:
        with open(path, "w") as f:
            json.dump(info, f)
    except OSError:
        pass


def main(argv: list[str]) -> None:
    as_module = argv[0] == "-m"
    target, args = (argv[1], argv[2:]) if as_module else (argv[0], argv[1:])
    sys.argv = [target, *args]
    try:
        if as_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:
        _record(exc)
        raise


if __name__ == "__main__":
    main(sys.argv[1:])
