"""Record the verdicts of reading mined cases into the cases file.

    python bench/realbugs/verify.py VERDICTS.jsonl [--cases bench/realbugs/cases.jsonl]

Each line of VERDICTS is ``{"repo", "commit", "path", "line_before", "verified", "note"}``:
``verified`` is true when the pre-fix line really was a device bug (it fails or computes on the
wrong device on some machine), false when the change was something else (a refactor, a dtype
conversion, a test parametrisation, a factory whose result rightly stays on the CPU). Verdicts
for cases not in the file are reported and ignored.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mine import DEFAULT_OUT, read_cases, write_cases


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("verdicts", type=Path)
    parser.add_argument("--cases", type=Path, default=DEFAULT_OUT)
    options = parser.parse_args(argv)
    cases = read_cases(options.cases)
    by_key = {case.key: case for case in cases}
    applied = unknown = 0
    for line in options.verdicts.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        verdict = json.loads(line)
        key = (verdict["repo"], verdict["commit"], verdict["path"], int(verdict["line_before"]))
        case = by_key.get(key)
        if case is None:
            unknown += 1
            print(f"no such case: {key}", file=sys.stderr)
            continue
        case.verified, case.note = bool(verdict["verified"]), str(verdict.get("note", ""))
        applied += 1
    write_cases(options.cases, cases)
    read = sum(case.verified is not None for case in cases)
    print(f"{applied} verdicts applied, {unknown} unknown; {read} of {len(cases)} cases read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
