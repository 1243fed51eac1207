"""Finding UCX for the JVM, without importing it: the ``libucx-cu11`` wheel
(``pip install 'pyspark-shuffle[ucx]'``) carries UCX's shared libraries under ``libucx/lib``.
The plugin loads them by absolute path (``spark.shuffle.adaptive.ucx.libraryPath``), so nothing
needs ``LD_LIBRARY_PATH``."""

from __future__ import annotations

from importlib import util
from pathlib import Path
from typing import Iterable, Optional

#: What the JVM loads, in link order (UcxLibrary.Libraries on the JVM side).
LIBRARIES = ("libucm.so.0", "libucs.so.0", "libuct.so.0", "libucp.so.0")

INSTALL_HINT = "pip install 'pyspark-shuffle[ucx]' (UCX 1.18.1 from the libucx-cu11 wheel)"


def library_dir_in(package_dirs: Iterable[Path]) -> Optional[str]:
    """The first ``<package>/lib`` among ``package_dirs`` that holds every UCX library."""
    for package in package_dirs:
        lib = Path(package) / "lib"
        if all((lib / name).is_file() for name in LIBRARIES):
            return str(lib.resolve())
    return None


def library_dir() -> Optional[str]:
    """The UCX library directory of the installed ``libucx`` wheel, or None without it."""
    spec = util.find_spec("libucx")
    if spec is None or not spec.submodule_search_locations:
        return None
    return library_dir_in(Path(p) for p in spec.submodule_search_locations)
