"""The ``env`` section of ``--json``: what machine and software the figures come from."""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from .config import BenchConfig


def _run(command: Sequence[str], cwd: Optional[str] = None) -> Optional[str]:
    try:
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return (done.stdout + done.stderr).strip()


def memory_bytes() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def java_version() -> Optional[str]:
    """The version line of ``java -version`` of the java Spark starts (JAVA_HOME's, else PATH's);
    the launcher's "Picked up JDK_JAVA_OPTIONS" notes come before it."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java:
        return None
    lines = [line for line in (_run([java, "-version"]) or "").splitlines() if "Picked up" not in line]
    return lines[0] if lines else None


def git_commit() -> Optional[Dict[str, Any]]:
    """Commit of the checkout the package runs from (editable installs), and whether it is dirty."""
    root = str(Path(__file__).resolve().parents[2])
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    if not commit:
        return None
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": commit, "dirty": bool(status)}


def environment(config: BenchConfig, argv: Sequence[str]) -> Dict[str, Any]:
    import pyspark

    from .. import __version__
    from .._jars import jar_path
    from .runner import harness_conf

    try:
        jar = os.path.basename(jar_path())
    except Exception as error:  # reported, the runs will fail with the same error
        jar = f"unavailable: {error}"
    return {
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "memory_bytes": memory_bytes(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "java": java_version(),
        "spark_version": pyspark.__version__,
        "plugin_version": __version__,
        "plugin_jar": jar,
        "git": git_commit(),
        "argv": list(argv),
        "args": config.to_json(),
        "cluster": config.cluster.to_json() if config.cluster else None,
        "spark_conf": harness_conf(config),
    }
