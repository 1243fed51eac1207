"""``python -m pyspark_shuffle blocks``: the block-transfer microbenchmark between two executors.

Map outputs are written on one executor of ``local-cluster[2,1,...]`` and read by reduce tasks
on the other (both pinned), once per transport variant, variants alternating within each
repeat: ``netty`` (Spark's block transfer service over loopback TCP; host-local file reads
off), ``ucx-shm`` (UCX one-sided reads over shared memory: ``UCX_TLS=posix,cma,self``) and
``ucx-tcp`` (``UCX_TLS=tcp,self``). Printed per block size and variant, medians over the
repeats: GB/s over the reduce stage and over the reduce tasks' reading time, and each
executor's CPU seconds per GB read (the serving one does nothing else meanwhile).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Dict, List, Optional

from ..values import format_size, parse_size

VARIANTS: Dict[str, dict] = {
    "netty": {"options": {"transport": "netty"}, "conf": {}},
    "ucx-shm": {"options": {"transport": "ucx"}, "conf": {"spark.executorEnv.UCX_TLS": "posix,cma,self"}},
    "ucx-tcp": {"options": {"transport": "ucx"}, "conf": {"spark.executorEnv.UCX_TLS": "tcp,self"}},
}

#: Both managers' sessions: pinned tasks never move, bytes travel as written (no compression),
#: and a same-host peer's files are not read directly, so Netty is the network path.
SESSION_CONF = {
    "spark.locality.wait": "1h",
    "spark.shuffle.compress": "false",
    "spark.shuffle.readHostLocalDisk": "false",
    "spark.executor.memory": "2g",
}


def plan(total_bytes: int, block_bytes: int) -> tuple:
    """(maps, reducers), square, with maps x reducers x block_bytes close to ``total_bytes``."""
    blocks = max(1, total_bytes // block_bytes)
    side = max(1, int(round(blocks**0.5)))
    return side, max(1, blocks // side)


def _two_executors(sc, timeout_s: float = 120.0) -> tuple:
    deadline = time.monotonic() + timeout_s
    while True:
        listed = sc._jsc.sc().getExecutorIds().mkString(",")  # a Scala Seq through py4j
        executors = sorted(e for e in listed.split(",") if e)
        if len(executors) >= 2:
            return executors[0], executors[1]
        if time.monotonic() > deadline:
            raise RuntimeError(f"local-cluster started {len(executors)} of 2 executors in {timeout_s} s")
        time.sleep(0.2)


def run_once(variant: str, block_bytes: int, total_bytes: int) -> dict:
    from .._jvm import java_spark_context, python_api
    from ..sessions import PLUGIN, start_session

    maps, reducers = plan(total_bytes, block_bytes)
    spec = VARIANTS[variant]
    spark = start_session(
        PLUGIN,
        conf=dict(SESSION_CONF, **spec["conf"]),
        options=spec["options"],
        master="local-cluster[2,1,2048]",
        app_name=f"blocks-{variant}",
    )
    try:
        sc = spark.sparkContext
        serving, reading = _two_executors(sc)
        raw = python_api(spark).blockTransferJson(
            java_spark_context(spark), serving, reading, maps, reducers, block_bytes
        )
        result = json.loads(raw)
        metrics = json.loads(python_api(spark).metricsJson(java_spark_context(spark)))
    finally:
        spark.stop()
    result.update(
        variant=variant,
        block_bytes=block_bytes,
        maps=maps,
        reducers=reducers,
        serving=serving,
        reading=reading,
        bytes_by_transport=metrics["application"].get("bytes_by_transport", {}),
    )
    expected = maps * reducers * block_bytes
    if (
        result["bytes"] != expected
        or result["map_executors"] != [serving]
        or result["reduce_executors"] != [reading]
    ):
        raise RuntimeError(f"the run did not go as pinned or lost bytes (expected {expected}): {result}")
    return result


def summarize(runs: List[dict]) -> List[dict]:
    rows = []
    keys = sorted(
        {(r["block_bytes"], r["variant"]) for r in runs}, key=lambda k: (-k[0], list(VARIANTS).index(k[1]))
    )
    for block_bytes, variant in keys:
        mine = [r for r in runs if r["block_bytes"] == block_bytes and r["variant"] == variant]
        gb = mine[0]["bytes"] / 1e9
        rows.append(
            {
                "block": format_size(block_bytes),
                "variant": variant,
                "runs": len(mine),
                "stage_gbps": statistics.median(gb / r["reduce_s"] for r in mine),
                "read_gbps": statistics.median(gb / r["read_s"] for r in mine),
                "serving_cpu_s_per_gb": statistics.median(r["serving_cpu_s"] / gb for r in mine),
                "reading_cpu_s_per_gb": statistics.median(r["reading_cpu_s"] / gb for r in mine),
            }
        )
    for row in rows:
        netty = next((o for o in rows if o["block"] == row["block"] and o["variant"] == "netty"), None)
        row["x_netty_read"] = row["read_gbps"] / netty["read_gbps"] if netty else None
        row["serving_cpu_vs_netty"] = (
            row["serving_cpu_s_per_gb"] / netty["serving_cpu_s_per_gb"]
            if netty and netty["serving_cpu_s_per_gb"] > 0
            else None
        )
    return rows


def format_table(rows: List[dict]) -> str:
    lines = [
        f"{'block':>6} {'variant':<8} {'runs':>4} {'stage GB/s':>10} {'read GB/s':>9} {'x netty':>7} "
        f"{'serving cpu s/GB':>16} {'vs netty':>8} {'reading cpu s/GB':>16}"
    ]
    for r in rows:
        ratio = "-" if r["x_netty_read"] is None else f"{r['x_netty_read']:.2f}"
        cpu_ratio = "-" if r["serving_cpu_vs_netty"] is None else f"{r['serving_cpu_vs_netty']:.2f}"
        lines.append(
            f"{r['block']:>6} {r['variant']:<8} {r['runs']:>4} {r['stage_gbps']:>10.2f} "
            f"{r['read_gbps']:>9.2f} "
            f"{ratio:>7} {r['serving_cpu_s_per_gb']:>16.3f} {cpu_ratio:>8} {r['reading_cpu_s_per_gb']:>16.3f}"
        )
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_shuffle blocks", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--size", default="1g", help="bytes shuffled per run (default 1g)")
    parser.add_argument(
        "--block-size", default="1m,64k", help="block sizes, comma-separated (default 1m,64k)"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write every run and the summary here")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; allowed: {', '.join(VARIANTS)}")
    total = parse_size(args.size)
    blocks = [parse_size(b) for b in args.block_size.split(",")]
    runs = []
    for repeat in range(args.repeat):
        for block_bytes in blocks:
            for variant in variants:
                run = run_once(variant, block_bytes, total)
                run["repeat"] = repeat
                runs.append(run)
                print(
                    f"repeat {repeat} {format_size(block_bytes)} {variant}: reduce {run['reduce_s']:.2f} s, "
                    f"read {run['read_s']:.2f} s, serving cpu {run['serving_cpu_s']:.2f} s, "
                    f"bytes {run['bytes_by_transport']}",
                    flush=True,
                )
    rows = summarize(runs)
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"runs": runs, "summary": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
