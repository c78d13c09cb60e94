"""The ``pydevice`` command line: ``python -m pydevice compile FILE.py ...``, and the
``pydevice`` console script the wheel installs. It runs the crate's own command line (clap,
``src/bin/pydevice.rs``), which the extension module carries, so ``pydevice --help`` is
the same here as from ``cargo install``."""

from __future__ import annotations

import sys


def main() -> None:
    from ._native import cli_main

    sys.exit(cli_main(["pydevice", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
