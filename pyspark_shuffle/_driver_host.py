"""Where a driver must listen so that a master's executors reach it."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"


def driver_host(master: str) -> str:
    """The driver's address for ``master``: loopback for ``local`` and ``local-cluster``
    masters; for ``spark://host:port`` the address of this machine that routes to the master's
    host (on a namespace cluster, the bridge's), found by the kernel's route lookup (a UDP
    socket's connect sends nothing)."""
    if not master.startswith("spark://"):
        return LOOPBACK
    first = master[len("spark://") :].split(",")[0]
    parts = urlsplit(f"spark://{first}")
    host, port = parts.hostname, parts.port or 7077
    if not host:
        raise ValueError(f"master {master!r} has no host")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, port))
        return probe.getsockname()[0]
