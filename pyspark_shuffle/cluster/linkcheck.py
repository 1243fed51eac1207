"""Measured throughput of each worker's link, both directions, against its configured rate.

A receiver runs in one namespace and a sender in the other for a fixed time (bounded: both
stop by themselves); only the cluster's own addresses are used."""

from __future__ import annotations

import subprocess
import sys
from typing import Dict, List

from . import plan
from .spec import format_rate
from .state import ClusterState

PORT = 5071

_RECEIVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(30)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(30); n = 0; first = None
while True:
    b = c.recv(1 << 20)
    if not b: break
    if first is None: first = time.monotonic()
    n += len(b)
print(n, time.monotonic() - (first or time.monotonic()))
"""

_SENDER = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
buf = b"\\0" * (1 << 20); end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end: s.sendall(buf)
s.close()
"""


def _in(namespace: str, argv: List[str]) -> List[str]:
    return (["ip", "netns", "exec", namespace] if namespace else []) + argv


def measure(receiver_ns: str, receiver_ip: str, sender_ns: str, seconds: float) -> float:
    """Bits per second a TCP stream achieved from ``sender_ns`` to ``receiver_ip``."""
    receiver = subprocess.Popen(
        _in(receiver_ns, [sys.executable, "-c", _RECEIVER, receiver_ip, str(PORT)]),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        if receiver.stdout.readline().strip() != "listening":
            raise RuntimeError(f"the receiver in {receiver_ns or 'the host namespace'} did not start")
        subprocess.run(
            _in(sender_ns, [sys.executable, "-c", _SENDER, receiver_ip, str(PORT), str(seconds)]),
            check=True,
            timeout=seconds + 30,
        )
        out, _ = receiver.communicate(timeout=30)
    finally:
        if receiver.poll() is None:
            receiver.kill()
    received, elapsed = out.split()
    return int(received) * 8 / max(float(elapsed), 1e-9)


def check(cluster: ClusterState, seconds: float = 2.0) -> List[Dict[str, object]]:
    """Per worker: configured rate, measured down (host -> worker) and up (worker -> host)."""
    spec = cluster.spec
    results = []
    for worker in range(1, spec.workers + 1):
        ns, address = plan.netns(spec, worker), spec.worker_address(worker)
        down = measure(ns, address, "", seconds)
        up = measure("", spec.bridge_address, ns, seconds)
        rate = spec.link_rate(worker)
        results.append(
            {
                "worker": worker,
                "rate_bps": rate,
                "down_bps": down,
                "up_bps": up,
                "down_ratio": down / rate,
                "up_ratio": up / rate,
            }
        )
    return results


def format_results(results: List[Dict[str, object]]) -> str:
    lines = [
        f"{'worker':>6} {'rate':>9} {'down Mbit/s':>12} {'up Mbit/s':>10} {'down/rate':>10} {'up/rate':>8}"
    ]
    for r in results:
        lines.append(
            f"{r['worker']:>6} {format_rate(r['rate_bps']):>9} {r['down_bps'] / 1e6:>12.1f} "
            f"{r['up_bps'] / 1e6:>10.1f} {r['down_ratio']:>10.2f} {r['up_ratio']:>8.2f}"
        )
    return "\n".join(lines)
