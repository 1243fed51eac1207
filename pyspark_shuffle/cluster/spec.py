"""What a cluster is made of: :class:`ClusterSpec`, and the parsing of rates and of
``bench --cluster workers=4,link=1gbit,...``. Pure: no privileges, no processes."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ..values import MIN_EXECUTOR_MEMORY_BYTES, format_size, parse_size

#: tc's rate units (decimal, bits per second).
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12}
_RATE = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[a-z]+)$")
RATE_FORMS = "a number with a unit of bit, kbit, mbit, gbit (e.g. 250mbit, 1gbit)"

#: Interface names are at most 15 characters: "<name>-w<NN>-h" must fit.
_NAME = re.compile(r"^[a-z][a-z0-9]{0,5}$")
MAX_WORKERS = 99
#: Worker i has host address FIRST_WORKER_HOST + i - 1 in the subnet; the bridge has host 1.
FIRST_WORKER_HOST = 11

#: A worker must offer at least Spark's smallest executor heap.
MIN_WORKER_MEMORY_MB = MIN_EXECUTOR_MEMORY_BYTES >> 20


class ClusterSpecError(ValueError):
    """A cluster specification value is invalid; the message names the option."""


def parse_rate(text: Any) -> int:
    """``"250mbit"`` -> 250_000_000 bits per second (tc's decimal units)."""
    match = _RATE.match(str(text).strip().lower())
    if not match or match.group("unit") not in _RATE_UNITS:
        raise ValueError(f"{text!r} is not a rate: expected {RATE_FORMS}")
    bits = int(float(match.group("number")) * _RATE_UNITS[match.group("unit")])
    if bits < 8000:
        raise ValueError(f"{text!r} is below 8kbit, too slow for a Spark cluster")
    return bits


def format_rate(bits: int) -> str:
    """250_000_000 -> ``"250mbit"``; the largest unit that divides the rate."""
    for unit in ("tbit", "gbit", "mbit", "kbit"):
        if bits % _RATE_UNITS[unit] == 0:
            return f"{bits // _RATE_UNITS[unit]}{unit}"
    return f"{bits}bit"


@dataclass(frozen=True)
class ClusterSpec:
    """A standalone Spark cluster of ``workers`` hosts (network namespaces) on one machine.

    ``link_bps`` limits every worker's link in each direction; ``link_of`` gives some workers
    (numbered from 1) another rate. ``memory_cap_bytes`` puts each worker's processes (the
    Worker daemon and its executors) in a memory cgroup of that size, page cache included;
    ``disk_rate_bytes`` throttles their reads and writes on the disk of their local dirs."""

    workers: int = 4
    cores: int = 1
    memory_mb: int = 2048
    link_bps: int = 1_000_000_000
    link_of: Tuple[Tuple[int, int], ...] = ()
    memory_cap_bytes: Optional[int] = None
    disk_rate_bytes: Optional[int] = None
    name: str = "pss"
    subnet: str = "10.231.0.0/24"

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= MAX_WORKERS:
            raise ClusterSpecError(f"workers: {self.workers} is not between 1 and {MAX_WORKERS}")
        if self.cores < 1:
            raise ClusterSpecError(f"cores: {self.cores} must be at least 1")
        if self.memory_mb < MIN_WORKER_MEMORY_MB:
            raise ClusterSpecError(
                f"memory: {self.memory_mb} MiB is below {MIN_WORKER_MEMORY_MB} MiB, "
                "the smallest executor Spark runs"
            )
        for worker, _ in self.link_of:
            if not 1 <= worker <= self.workers:
                raise ClusterSpecError(f"link-of: worker {worker} is not between 1 and {self.workers}")
        if len({w for w, _ in self.link_of}) != len(self.link_of):
            raise ClusterSpecError("link-of: a worker is given twice")
        for option, value in (("memory-cap", self.memory_cap_bytes), ("disk-rate", self.disk_rate_bytes)):
            if value is not None and value <= 0:
                raise ClusterSpecError(f"{option}: must be a positive size")
        if self.memory_cap_bytes is not None and self.memory_cap_bytes < (self.memory_mb << 20):
            raise ClusterSpecError(
                f"memory-cap: {format_size(self.memory_cap_bytes)} is below the worker's memory "
                f"({self.memory_mb}m): its executors would be killed by the cgroup"
            )
        if not _NAME.match(self.name):
            raise ClusterSpecError(
                f"name: {self.name!r} must be 1-6 lowercase letters and digits, starting with a letter"
            )
        network = self.network
        if network.version != 4 or network.num_addresses < FIRST_WORKER_HOST + self.workers + 1:
            raise ClusterSpecError(
                f"subnet: {self.subnet} has no room for the bridge and {self.workers} workers"
            )

    @property
    def network(self) -> ipaddress.IPv4Network:
        try:
            return ipaddress.IPv4Network(self.subnet, strict=True)
        except ValueError as error:
            raise ClusterSpecError(f"subnet: {error}") from None

    @property
    def bridge_address(self) -> str:
        """The host namespace's address on the bridge: the driver's and the master's."""
        return str(self.network.network_address + 1)

    def worker_address(self, worker: int) -> str:
        return str(self.network.network_address + FIRST_WORKER_HOST + worker - 1)

    def link_rate(self, worker: int) -> int:
        return dict(self.link_of).get(worker, self.link_bps)

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "workers": self.workers,
            "cores": self.cores,
            "memory_mb": self.memory_mb,
            "link": format_rate(self.link_bps),
            "link_of": {str(w): format_rate(r) for w, r in self.link_of},
            "link_bps_by_worker": {str(w): self.link_rate(w) for w in range(1, self.workers + 1)},
            "memory_cap_bytes": self.memory_cap_bytes,
            "disk_rate_bytes": self.disk_rate_bytes,
            "subnet": self.subnet,
        }

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ClusterSpec":
        return cls(
            workers=data["workers"],
            cores=data["cores"],
            memory_mb=data["memory_mb"],
            link_bps=parse_rate(data["link"]),
            link_of=tuple((int(w), parse_rate(r)) for w, r in data.get("link_of", {}).items()),
            memory_cap_bytes=data.get("memory_cap_bytes"),
            disk_rate_bytes=data.get("disk_rate_bytes"),
            name=data["name"],
            subnet=data["subnet"],
        )


def parse_link_of(text: str) -> Tuple[int, int]:
    """``"3=100mbit"`` or ``"3:100mbit"`` -> (3, 100_000_000)."""
    match = re.fullmatch(r"\s*([0-9]+)\s*[=:]\s*(\S+)\s*", text)
    if not match:
        raise ClusterSpecError(f"link-of: expected WORKER=RATE (e.g. 3=100mbit), got {text!r}")
    try:
        return int(match.group(1)), parse_rate(match.group(2))
    except ValueError as error:
        raise ClusterSpecError(f"link-of: {error}") from None


def memory_mb(text: str, option: str = "memory") -> int:
    try:
        value = parse_size(text, default_unit="m")
    except ValueError as error:
        raise ClusterSpecError(f"{option}: {error}") from None
    if value % (1 << 20):
        raise ClusterSpecError(f"{option}: {text!r} is not a whole number of MiB")
    return value >> 20


def size_bytes(text: str, option: str) -> int:
    try:
        return parse_size(text)
    except ValueError as error:
        raise ClusterSpecError(f"{option}: {error}") from None


def rate_bits(text: str, option: str = "link") -> int:
    try:
        return parse_rate(text)
    except ValueError as error:
        raise ClusterSpecError(f"{option}: {error}") from None


#: ``--cluster`` keys, the ClusterSpec field each sets and how its value is parsed.
_KEYS = {
    "workers": ("workers", lambda v: _int(v, "workers")),
    "cores": ("cores", lambda v: _int(v, "cores")),
    "memory": ("memory_mb", memory_mb),
    "link": ("link_bps", rate_bits),
    "memory-cap": ("memory_cap_bytes", lambda v: size_bytes(v, "memory-cap")),
    "disk-rate": ("disk_rate_bytes", lambda v: size_bytes(v, "disk-rate")),
    "name": ("name", str),
    "subnet": ("subnet", str),
}
CLUSTER_KEYS = tuple(_KEYS) + ("link-of",)


def _int(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ClusterSpecError(f"{option}: {text!r} is not an integer") from None


def parse_cluster(text: str) -> ClusterSpec:
    """``"workers=4,link=1gbit,link-of=3:100mbit,memory=2g"`` -> :class:`ClusterSpec`.

    Keys: workers, cores, memory, link, link-of (WORKER:RATE, repeatable), memory-cap,
    disk-rate (bytes per second), name, subnet; the others keep their defaults."""
    fields: Dict[str, Any] = {}
    link_of = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or not value.strip():
            raise ClusterSpecError(f"expected key=value items, got {item!r}")
        if key == "link-of":
            link_of.append(parse_link_of(value))
            continue
        if key not in _KEYS:
            raise ClusterSpecError(f"unknown key {key!r}; choose from {', '.join(CLUSTER_KEYS)}")
        field_name, parse = _KEYS[key]
        if field_name in fields:
            raise ClusterSpecError(f"{key} is given twice")
        fields[field_name] = parse(value.strip())
    return ClusterSpec(link_of=tuple(link_of), **fields)
