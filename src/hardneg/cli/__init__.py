"""The ``hardneg`` command line: one sub-module per stage registers its sub-commands.

Each module in this package (other than this one) defines ``register(subparsers)``; adding a
stage's commands means adding a module here, nothing else.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hardneg",
        description="Hard negatives for sentence-embedding training, and what they buy.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError, RuntimeError, OSError) as exc:
        # User-facing errors already name the file/setting; no deep traceback.
        if args.verbose:
            raise
        print(f"hardneg {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
