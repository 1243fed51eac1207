"""Bytes and utilisation per link and stage, from sampled link counters (no cluster needed)."""

import dataclasses

from bench_runs import bench_run

from pyspark_shuffle.bench.links import LinkSampler, read_counters, usage


def test_usage_splits_bytes_by_span_and_divides_by_span_and_rate():
    # worker 1: 1 MB/s down from t=0 to t=10; worker 2: idle until t=5, then 2 MB/s up.
    samples = [(float(t), {"1": (t * 10**6, 0), "2": (0, max(0, t - 5) * 2 * 10**6)}) for t in range(11)]
    rates = {"1": 80 * 10**6, "2": 160 * 10**6}
    result = usage(samples, rates, {"map": (0.0, 5.0), "reduce": (5.0, 10.0), "half": (2.5, 3.5)})
    assert result["1"]["map"] == {
        "seconds": 5.0,
        "down_bytes": 5 * 10**6,
        "up_bytes": 0,
        "down_util": 0.1,
        "up_util": 0.0,
    }
    assert result["2"]["map"]["up_bytes"] == 0
    assert result["2"]["reduce"]["up_bytes"] == 10 * 10**6 and result["2"]["reduce"]["up_util"] == 0.1
    assert result["1"]["half"]["down_bytes"] == 10**6  # interpolated between samples
    assert result["1"]["rate_bps"] == 80 * 10**6


def test_sampler_reads_host_side_counters(tmp_path):
    for device, (tx, rx) in {"pss-w1-h": (100, 7), "pss-w2-h": (5, 9)}.items():
        stats = tmp_path / device / "statistics"
        stats.mkdir(parents=True)
        (stats / "tx_bytes").write_text(f"{tx}\n")
        (stats / "rx_bytes").write_text(f"{rx}\n")
    assert read_counters({"1": "pss-w1-h", "2": "pss-w2-h"}, root=str(tmp_path)) == {
        "1": (100, 7),
        "2": (5, 9),
    }


def test_sampler_samples_until_stopped(monkeypatch):
    counts = iter(range(10**6))
    monkeypatch.setattr("pyspark_shuffle.bench.links.read_counters", lambda links: {"1": (next(counts), 0)})
    with LinkSampler({"1": "dev"}, interval_s=0.001) as sampler:
        while len(sampler.samples) < 5:
            pass
    values = [c["1"][0] for _, c in sampler.samples]
    assert values == sorted(values) and len(values) >= 6


def test_run_figures_and_network_table():
    from pyspark_shuffle.bench.links import run_figures
    from pyspark_shuffle.bench.tables import network_table

    def phase(down, util):
        return {"seconds": 1.0, "down_bytes": down, "up_bytes": 0, "down_util": util, "up_util": 0.0}

    links = {
        "1": {"rate_bps": 10**8, "map": phase(1 << 20, 0.1), "reduce": phase(8 << 20, 0.9)},
        "2": {"rate_bps": 10**8, "map": phase(0, 0.0), "reduce": phase(2 << 20, 0.3)},
    }
    figures = run_figures(links)
    assert figures == {
        "link_map_bytes": float(1 << 20),
        "link_reduce_bytes": float(10 << 20),
        "reduce_util_mean": 0.6,
        "reduce_util_max": 0.9,
        # Link 1 carried 8 MiB down in the reduce stage at 100 Mbit/s.
        "reduce_bound_s": (8 << 20) * 8 / 10**8,
        # Link 1 carried 9 MiB down over both stages.
        "job_link_s": (9 << 20) * 8 / 10**8,
    }
    assert run_figures({})["link_reduce_bytes"] is None

    run = bench_run(
        workload="dummy",
        skew=2.0,
        manager="adaptive",
        status="ok",
        map_stage_s=3.0,
        reduce_stage_s=4.0,
        spark_fetch_wait_ms=1500,
        plugin={"mean_buffered_bytes": 3 << 20},
        links=links,
        wall_s=10.0,
        map_task_s=4.0,
        num_partitions=8,
    )
    # Another manager's run of the shape that carried twice as much: the shape's bound is the
    # least any run carried, 9 MiB over link 1 plus one map task's 0.5 s.
    doubled = {w: {**link, "map": phase(2 * link["map"]["down_bytes"], 0.2)} for w, link in links.items()}
    other = dataclasses.replace(
        run, manager="sort", links={**doubled, "1": {**doubled["1"], "reduce": phase(16 << 20, 0.9)}}
    )
    bound = (9 << 20) * 8 / 10**8 + 0.5
    table = network_table([run, other, dataclasses.replace(run, status="failed", links={})]).splitlines()
    assert table[0].split()[:3] == ["workload", "skew", "manager"]
    assert table[2].split() == [
        "dummy",
        "2",
        "adaptive",
        "3.00",
        "4.00",
        "1.50",
        "3.0",
        "1",
        "10",
        "0.60",
        "0.90",
        "0.67",
        "5.96",
        f"{bound:.2f}",
        f"{10.0 / bound:.2f}",
    ]
    assert table[3].split()[2] == "sort" and table[3].split()[-2] == f"{bound:.2f}"
    assert network_table([dataclasses.replace(run, links={})]) is None
