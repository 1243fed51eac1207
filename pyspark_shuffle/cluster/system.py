"""What the cluster needs from the machine: privileges, ``ip``/``tc``, cgroup v1 controllers,
processes in a namespace, the disk under a directory. Each check fails with one clear error."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
from typing import Dict, Iterable, List, Optional, Sequence

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21  # creating network namespaces
LOCAL_CLUSTER_HINT = "local-cluster[N,cores,memory] masters (one host, no namespaces) remain available"


class ClusterError(RuntimeError):
    """The cluster could not be brought up, used or taken down; the message says why."""


class PrivilegeError(ClusterError):
    """This process may not create network namespaces, links and qdiscs."""


def effective_capabilities() -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def require_privileges(
    capabilities: Optional[int] = None, euid: Optional[int] = None, which=shutil.which
) -> None:
    """Raise :class:`PrivilegeError` unless network namespaces and qdiscs can be made here."""
    caps = effective_capabilities() if capabilities is None else capabilities
    uid = os.geteuid() if euid is None else euid
    needed = (1 << CAP_NET_ADMIN) | (1 << CAP_SYS_ADMIN)
    if uid != 0 and caps & needed != needed:
        raise PrivilegeError(
            "a namespace cluster needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network "
            f"namespaces, veth links and tc qdiscs; this process has neither. {LOCAL_CLUSTER_HINT}."
        )
    missing = [tool for tool in ("ip", "tc") if which(tool) is None]
    if missing:
        raise PrivilegeError(
            f"a namespace cluster needs {' and '.join(missing)} (Debian package iproute2) on the PATH. "
            f"{LOCAL_CLUSTER_HINT}."
        )


def run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(list(argv), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise ClusterError(
            f"`{' '.join(argv)}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()}"
        )
    return done


def existing_netns() -> List[str]:
    return [line.split()[0] for line in run(["ip", "netns", "list"]).stdout.splitlines() if line.strip()]


def link_exists(name: str) -> bool:
    return run(["ip", "link", "show", "dev", name], check=False).returncode == 0


def used_networks() -> List[ipaddress.IPv4Network]:
    """Networks of this namespace's routes and addresses."""
    networks = []
    for route in json.loads(run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout or "[]"):
        destination = route.get("dst", "")
        if destination and destination != "default" and route.get("type", "unicast") in ("unicast", "local"):
            try:
                networks.append(ipaddress.IPv4Network(destination, strict=False))
            except ValueError:
                pass
    for link in json.loads(run(["ip", "-j", "-4", "addr"]).stdout or "[]"):
        for info in link.get("addr_info", []):
            networks.append(ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False))
    return networks


def cgroup_v1_root(controller: str) -> Optional[str]:
    """Mount point of the cgroup v1 ``controller`` hierarchy, None without one."""
    try:
        with open("/proc/mounts") as handle:
            for line in handle:
                _, mount, fstype, options = line.split()[:4]
                if fstype == "cgroup" and controller in options.split(","):
                    return mount
    except OSError:
        pass
    return None


def own_cgroup(controller: str) -> str:
    """This process's cgroup path in the v1 ``controller`` hierarchy ("/" at the root)."""
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controller in controllers.split(","):
                return path
    return "/"


def cgroup_dir(controller: str, name: str) -> str:
    """Where a worker's cgroup goes: a child of this process's own cgroup, so whatever limits
    this process has still hold and nothing outside it is touched."""
    root = cgroup_v1_root(controller)
    if root is None:
        raise ClusterError(
            f"the kernel has no cgroup v1 '{controller}' controller mounted here, which "
            f"{'--memory-cap' if controller == 'memory' else '--disk-rate'} needs"
        )
    return os.path.join(root + own_cgroup(controller), name)


def whole_disk(path: str) -> str:
    """``MAJOR:MINOR`` of the disk (not the partition) holding ``path``, for blkio throttles."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    sys_path = f"/sys/dev/block/{major}:{minor}"
    if major == 0 or not os.path.exists(sys_path):
        raise ClusterError(
            f"--disk-rate: {path} is not on a block device (device {major}:{minor}, e.g. tmpfs or overlay); "
            "give the cluster a directory on a disk"
        )
    real = os.path.realpath(sys_path)
    if os.path.exists(os.path.join(real, "partition")):
        with open(os.path.join(os.path.dirname(real), "dev")) as handle:
            return handle.read().strip()
    return f"{major}:{minor}"


def netns_pids(namespace: str) -> List[int]:
    done = run(["ip", "netns", "pids", namespace], check=False)
    return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []


def pids_with_env(name: str, value: str) -> List[int]:
    """Processes whose environment sets ``name`` to ``value`` (what they inherited at start)."""
    entry = f"{name}={value}".encode()
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/environ", "rb") as handle:
                    if entry in handle.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                continue
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def process_group(pgid: int) -> List[int]:
    """Processes whose process group is ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid:
                members.append(int(entry))
    return members


def kill(pids: Iterable[int], grace_s: float = 5.0) -> None:
    """SIGTERM, then SIGKILL what is still alive after ``grace_s``."""
    pids = [p for p in pids if alive(p)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if alive(p)]
            if pids:
                time.sleep(0.05)  # polling process exit; ends when all are gone or at the deadline
        if not pids:
            return


def write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def spark_home() -> str:
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def spark_class(home: str) -> str:
    path = os.path.join(home, "bin", "spark-class")
    if not os.access(path, os.X_OK):
        raise ClusterError(f"{path} is missing or not executable: is pyspark installed from pip?")
    return path


def free_ports(host: str, count: int) -> List[int]:
    """``count`` distinct ports free on ``host`` now (all held open while choosing)."""
    import socket

    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((host, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def processes_with(mark: str, pids: Iterable[int]) -> Dict[int, str]:
    return {p: c for p, c in ((p, cmdline(p)) for p in pids) if mark in c}
