"""``python -m pyspark_shuffle bench``: plan, run, report."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from .. import _profiler
from . import profiles
from .command_line import parse_args
from .environment import environment
from .plot import PlotUnavailable, require_matplotlib, write_held_plot, write_plot, write_skew_reports
from .runner import plan, run_all, run_one, write_json
from .tables import (
    combine_table,
    format_table,
    held_memory_table,
    kill_table,
    logs_summary,
    memory_table,
    network_table,
    push_table,
    result_mismatches,
    summarize,
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    config = parse_args(argv)
    if config.plot_path:
        try:
            require_matplotlib()
        except PlotUnavailable as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if config.cluster and not config.master_url:
        from ..cluster import ClusterError, lifecycle

        try:
            with lifecycle.running(config.cluster, log=lambda line: print(line, flush=True)) as cluster:
                config.master_url = cluster.master_url
                return _run(config, argv)
        except ClusterError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    if config.master_url:
        from ..cluster import find_by_master, lifecycle

        recorded = find_by_master(config.master_url)
        if recorded is not None:
            with lifecycle.exported_work_dirs(recorded):
                return _run(config, argv)
    return _run(config, argv)


def _run(config, argv) -> int:
    if config.profile_dir:
        jar, why = _profiler.jar()
        if jar is None:
            print(f"profile: {why}; running without --profile", flush=True)
            config.profile_dir = None
    env = environment(config, argv)
    if config.min_memory:
        return _min_memory(config, env)
    runs = len(plan(config))
    print(
        f"bench: {runs} runs on {config.master}: workloads {', '.join(config.workloads)}, "
        f"skews {', '.join(f'{s:g}' for s in config.skews)}, managers "
        f"{', '.join(m.label for m in config.managers)}, {config.repeat} repeat(s), "
        f"size {config.size_bytes} bytes in {config.num_partitions} partitions"
        + (
            f"; each timed run after {config.warmup} warm-up run(s) in its application, the first "
            "of them timed as the cold figures"
            if config.warmup
            else ""
        ),
        flush=True,
    )
    records = run_all(config, env, log=lambda line: print(line, flush=True))
    summaries = summarize(records)
    print()
    print(format_table(summaries))
    for extra in (
        network_table(records),
        push_table(records),
        combine_table(records),
        kill_table(records),
        held_memory_table(records),
        memory_table(records),
    ):
        if extra:
            print()
            print(extra)
    if config.profile_dir:
        for table in profiles.phase_tables(records):
            print()
            print(table)
        for line in filter(None, [profiles.unavailable_summary(records)]):
            print(line)
        for path in profiles.write_pages(records, config.profile_dir):
            print(f"wrote {path}")
    for problem in result_mismatches(records):
        print(f"WARNING: results differ: {problem}")
    print(logs_summary(records))
    failed = [r for r in records if not r.ok]
    if failed:
        print(
            f"{len(failed)} of {len(records)} runs failed; see the errors above"
            + (f" and in {config.json_path}" if config.json_path else "")
        )
    if config.json_path:
        print(f"wrote {config.json_path}")
    if config.plot_path:
        write_plot(summaries, config.plot_path)
        print(f"wrote {config.plot_path}")
        held = write_held_plot(records, config.plot_path)
        if held:
            print(f"wrote {held}")
        for path in write_skew_reports(records, config.plot_path):
            print(f"wrote {path}")
    return 1 if failed and len(failed) == len(records) else 0


def _min_memory(config, env) -> int:
    from .min_memory import min_memory_table, search_all, summary

    print(
        f"bench --min-memory {config.min_memory} on {config.master}: workloads "
        f"{', '.join(config.workloads)}, managers {', '.join(m.label for m in config.managers)}, "
        f"from {config.executor_memory_mb} MiB down",
        flush=True,
    )
    probes = []

    def run(probe_config, spec):
        record = run_one(probe_config, spec)
        probes.append(record)
        if config.json_path:
            write_json(config.json_path, env, probes)
        return record

    searches = search_all(config, run, log=lambda line: print(line, flush=True))
    if config.json_path:
        write_json(config.json_path, {**env, "min_memory": summary(searches)}, probes)
    print()
    print(min_memory_table(searches))
    return 0
