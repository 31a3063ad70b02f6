"""Command line: ``python -m ember.serialization.scan FILE...``.

Prints what each checkpoint's pickles would import and run (see ``ember.serialization.scan``)
and exits with 0 when every file is safe under ``weights_only``, 1 when any is not, 2 when a
file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
import types

from ember.serialization._scanner import scan

__all__ = ["main"]


def _as_json(result) -> dict:
    return {
        "path": result.path, "format": result.format, "safe": result.safe,
        "error": result.error, "globals": result.globals,
        "unsafe_globals": result.unsafe_globals,
        "pickles": [{"record": p.record, "safe": p.safe, "error": p.error,
                     "globals": [vars(g) for g in p.globals],
                     "code_opcodes": p.code_opcodes,
                     "unsupported_opcodes": p.unsupported_opcodes} for p in result.pickles],
    }


def main(argv: list[str] | None = None) -> int:
    """Scan each file named on the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m ember.serialization.scan",
        description="List the globals and code-running opcodes in checkpoint pickles, without "
                    "executing them, with a verdict under weights_only loading.")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--json", action="store_true", help="print one JSON object per file")
    args = parser.parse_args(argv)
    status = 0
    for path in args.files:
        try:
            result = scan(path)
        except OSError as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            status = 2
            continue
        print(json.dumps(_as_json(result)) if args.json else result)
        if not result.safe:
            status = max(status, 1)
    return status


class _CallableModule(types.ModuleType):
    """Importing this module rebinds ``ember.serialization.scan`` from the function to the
    module (Python sets a package attribute per imported submodule), so the module answers
    calls as the function does: ``ember.serialization.scan(path)`` works either way."""

    def __call__(self, path, *args, **kwargs):
        return scan(path, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
