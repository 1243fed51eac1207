"""async-profiler's jar for the plugin's stage profiler (``configure(profile_dir=...)``,
``bench --profile``): ``tools.profiler:async-profiler`` from Maven Central, which carries the
agent for linux-x64 and linux-arm64 (and macOS). Fetched once into a cache directory and checked
against the digest below; the wheel does not ship it."""

from __future__ import annotations

import hashlib
import os
import platform
import tempfile
import urllib.request
from pathlib import Path
from typing import Optional, Tuple

GROUP, ARTIFACT, VERSION = "tools.profiler", "async-profiler", "4.6"
#: SHA-256 of the 4.6 jar on Maven Central.
SHA256 = "a5d3d9f4582c2033fa9db518046e73ef97219801f3e7542b82e3e09261ebe493"
URL = (
    f"https://repo1.maven.org/maven2/{GROUP.replace('.', '/')}/{ARTIFACT}/{VERSION}/{ARTIFACT}-{VERSION}.jar"
)

#: Where the jar is kept: ``$PYSPARK_SHUFFLE_CACHE``, else ``~/.cache/pyspark-shuffle``.
CACHE_ENV = "PYSPARK_SHUFFLE_CACHE"

#: The platforms the jar has an agent for (``platform.system()``, ``platform.machine()``).
PLATFORMS = {("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "x86_64"), ("Darwin", "arm64")}


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "pyspark-shuffle")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def jar(download: bool = True, timeout: float = 60.0) -> Tuple[Optional[str], Optional[str]]:
    """``(path, None)`` of the jar, fetched first if needed (``download``), or ``(None, why)``."""
    machine = (platform.system(), platform.machine())
    if machine not in PLATFORMS:
        return None, f"async-profiler has no agent for {machine[0]} {machine[1]}"
    path = cache_dir() / f"{ARTIFACT}-{VERSION}.jar"
    if path.is_file() and _digest(path) == SHA256:
        return str(path), None
    if not download:
        return None, f"{path} is not there (fetched from {URL} on first use)"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".async-profiler-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(URL, timeout=timeout) as response:
                out.write(response.read())
            if _digest(Path(tmp)) != SHA256:
                return None, f"{URL} did not match its SHA-256"
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as error:
        return None, f"could not fetch {URL}: {error}"
    return str(path), None
