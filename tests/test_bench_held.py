"""What executors held over a span, from the probe's buckets (bench/held.py), and the table that
leads the bench's memory figures with it."""

from bench_runs import bench_run

from pyspark_shuffle.bench import held
from pyspark_shuffle.bench.one_run import fetch_memory
from pyspark_shuffle.bench.tables import held_memory_table

MIB = 1 << 20


def series(start_ms, values, bucket_ms=250):
    """Buckets from ``start_ms``, each field's mean ``v`` MiB and max ``2 v`` MiB."""
    out = {"bucket_ms": bucket_ms, "start_ms": [start_ms + i * bucket_ms for i in range(len(values))]}
    for field in held.FIELDS.values():
        out[field] = {"max": [2 * v * MIB for v in values], "mean": [v * MIB for v in values]}
    return out


def test_means_weigh_each_bucket_by_the_part_of_it_the_span_covers():
    s = series(10_000, [10, 20, 30, 40])  # buckets at 10.00, 10.25, 10.50, 10.75 s
    whole = held.over_span(s, None)
    assert whole["buffered_mean_bytes"] == 25 * MIB and whole["buffered_peak_bytes"] == 80 * MIB
    # 10.25 s to 10.625 s: all of the second bucket, half of the third.
    part = held.over_span(s, (10.25, 10.625))
    assert part["live_heap_mean_bytes"] == round((20 * 250 + 30 * 125) / 375 * MIB)
    assert part["live_heap_peak_bytes"] == 60 * MIB
    assert set(part) == {f"{n}_{k}_bytes" for n in held.FIELDS for k in ("peak", "mean")}


def test_a_span_no_bucket_falls_in_has_no_figure_rather_than_zero():
    outside = held.over_span(series(10_000, [10]), (20.0, 30.0))
    assert set(outside.values()) == {None}
    assert set(held.over_span({}, None).values()) == {None}


def test_a_record_keeps_the_buckets_of_its_timed_run():
    kept = held.within(series(10_000, [1, 2, 3, 4, 5]), (10.3, 10.6))
    assert kept["start_ms"] == [10_250, 10_500]
    assert kept["rss_bytes"]["mean"] == [2 * MIB, 3 * MIB]


def test_the_held_table_compares_the_executor_that_held_most_with_sort():
    def run(manager, buffered, live):
        reduce_span = (100.0, 101.0)
        probe_series = {
            "0": series(100_000, [1, 1, 1, 1]),
            "1": {
                **series(100_000, [buffered] * 4),
                "live_heap_bytes": {"max": [2 * live * MIB] * 4, "mean": [live * MIB] * 4},
            },
        }
        return bench_run(
            status="ok",
            workload="slowreduce",
            manager=manager,
            wall_s=10.0,
            fetch_memory=fetch_memory({}, {}, {}, probe_series, reduce_span),
        )

    records = [run("sort", 40, 300), run("sort", 60, 500), run("adaptive", 10, 420)]
    table = held_memory_table(records).splitlines()
    assert table[0].split()[:7] == ["workload", "skew", "manager", "wall", "s", "vs", "sort"]
    assert table[2].split() == [
        "slowreduce", "0", "sort", "10.00", "1.00x", "50.0", "1.00x", "100.0", "400", "1.00x", "800",
        "50.0", "50", "1.00x",
    ]  # fmt: skip
    assert table[3].split()[5:11] == ["10.0", "0.20x", "20.0", "420", "1.05x", "840"]
    # Without the probe's series there is no table, not a table of zeros.
    assert held_memory_table([bench_run(status="ok", workload="w", manager="sort", wall_s=1.0)]) is None


def test_held_over_time_sums_the_executors_from_the_reduce_stage_start(tmp_path):
    from pyspark_shuffle.bench.plot import held_over_time, write_held_plot

    def run(manager):
        return bench_run(
            status="ok",
            manager=manager,
            wall_s=1.0,
            spans={"reduce": [100.0, 101.0]},
            memory_series={"0": series(100_000, [1, 2]), "1": series(100_000, [3, 4])},
        )

    times, values = held_over_time(run("sort"), "buffered_bytes")
    assert times == [0.0, 0.25] and values == [4 * MIB, 6 * MIB]
    path = write_held_plot([run("sort"), run("adaptive")], str(tmp_path / "bench.png"))
    assert path == str(tmp_path / "bench-held.png") and (tmp_path / "bench-held.png").stat().st_size > 0
    # Runs without the probe's series draw nothing.
    assert write_held_plot([bench_run(status="ok", wall_s=1.0)], str(tmp_path / "none.png")) is None
