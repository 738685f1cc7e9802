"""Compare the prose and text outputs of executed pages with another copy of them.

    python bench/compare_pages.py OLD_DIR NEW_DIR [--with-provenance] [--exact]

OLD_DIR and NEW_DIR hold executed copies with the same file names (for example the committed
``book/`` exported with ``git show`` and a fresh ``sinkframes_build build --out``). Prints one line per
page, then the differences; exits 1 if any page differs. A printed decimal that moved by one unit in its last
digit (float round-off on another machine) is counted on the page's line, not a difference, unless ``--exact``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sinkframes_build.compare import compare_counting_roundoff


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--with-provenance", action="store_true", help="also compare the provenance line (versions)")
    ap.add_argument("--exact", action="store_true", help="a decimal moved by one unit in its last digit differs too")
    args = ap.parse_args(argv)
    status = 0
    for old in sorted(args.old.glob("*.ipynb")):
        new = args.new / old.name
        if not new.exists():
            print(f"{old.name}: missing in {args.new}")
            status = 1
            continue
        problems, moved = compare_counting_roundoff(old, new, skip_provenance=not args.with_provenance,
                                                    exact=args.exact)
        roundoff = f" ({moved} decimal(s) moved by one unit in the last printed digit)" if moved else ""
        verdict = "same prose and text outputs" if not problems else f"{len(problems)} difference(s)"
        print(f"{old.name}: {verdict}{roundoff}")
        for p in problems:
            print("    " + p.replace("\n", "\n    "))
        status |= bool(problems)
    return status


if __name__ == "__main__":
    sys.exit(main())
