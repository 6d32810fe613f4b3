"""``python -m continuity.traces check FILE...``: validate trace files, list every issue.

Every failure is a coded line (``path: code: message (at $.json.path)``) and exit 1; a
file is read only up to the trace size limit, and a device, FIFO or directory is refused
before any read (``input_not_a_file``), so even ``/dev/zero`` fails quickly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from continuity.errors import TraceInvalid, UsageError
from continuity.traces.bounds import estimate_tokens
from continuity.traces.suites import read_user_trace
from continuity.traces.validate import load_trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m continuity.traces")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate trace files and print every issue")
    check.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args(argv)
    failed = 0
    for path in args.files:
        try:
            trace = load_trace(read_user_trace(path), source=str(path))
        except UsageError as exc:
            print(exc)
            failed += 1
        except TraceInvalid as exc:
            failed += 1
            for issue in exc.issues:
                print(f"{path}: {issue}")
        else:
            print(
                f"{path}: ok ({trace.family}, {len(trace.probes)} probes, "
                f"~{estimate_tokens(trace):,} estimated tokens)"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
