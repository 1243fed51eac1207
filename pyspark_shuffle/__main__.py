"""``python -m pyspark_shuffle COMMAND [ARGS]``."""

from __future__ import annotations

import sys
from typing import Callable, Dict, List, Optional


def _bench(argv: List[str]) -> int:
    from .bench import main

    return main(argv)


def _blocks(argv: List[str]) -> int:
    from .bench.blocks import main

    return main(argv)


def _report(argv: List[str]) -> int:
    from .report.cli import main

    return main(argv)


def _cluster(argv: List[str]) -> int:
    from .cluster.cli import main

    return main(argv)


COMMANDS: Dict[str, Callable[[List[str]], int]] = {
    "bench": _bench,
    "blocks": _blocks,
    "cluster": _cluster,
    "report": _report,
}
USAGE = (
    "usage: python -m pyspark_shuffle COMMAND [ARGS]\n\n"
    "commands:\n"
    "  bench     benchmark shuffle managers (bench --help for its options)\n"
    "  blocks    block transfer between two executors: Netty vs UCX (blocks --help)\n"
    "  cluster   a multi-host Spark standalone cluster in network namespaces (cluster --help)\n"
    "  report    the skew report of a bench JSON or a Spark event log (report --help)\n"
)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        sys.stderr.write(f"unknown command {argv[0]!r}\n{USAGE}")
        return 2
    return command(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
