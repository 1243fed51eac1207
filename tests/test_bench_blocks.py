import pytest

from pyspark_shuffle.bench import blocks


@pytest.mark.parametrize(
    "total, block, expected",
    [(1 << 30, 1 << 20, (32, 32)), (1 << 30, 64 << 10, (128, 128)), (10, 64, (1, 1))],
)
def test_plan_is_square_and_covers_the_size(total, block, expected):
    assert blocks.plan(total, block) == expected


def _run(variant, block, reduce_s, read_s, serving_cpu):
    return {
        "variant": variant,
        "block_bytes": block,
        "bytes": 2_000_000_000,
        "reduce_s": reduce_s,
        "read_s": read_s,
        "serving_cpu_s": serving_cpu,
        "reading_cpu_s": 1.0,
    }


def test_summary_takes_medians_and_ratios_to_netty():
    runs = [
        _run("netty", 1 << 20, 4.0, 2.0, 1.0),
        _run("netty", 1 << 20, 5.0, 2.0, 3.0),
        _run("netty", 1 << 20, 6.0, 2.0, 2.0),
        _run("ucx-shm", 1 << 20, 1.0, 0.5, 0.1),
        _run("ucx-shm", 1 << 20, 2.0, 0.5, 0.2),
        _run("ucx-shm", 1 << 20, 3.0, 0.5, 0.3),
    ]
    netty, ucx = blocks.summarize(runs)
    assert (netty["variant"], ucx["variant"]) == ("netty", "ucx-shm")
    assert netty["stage_gbps"] == pytest.approx(2 / 5.0) and ucx["stage_gbps"] == pytest.approx(2 / 2.0)
    assert ucx["x_netty_read"] == pytest.approx(4.0)
    assert netty["serving_cpu_s_per_gb"] == pytest.approx(1.0) and ucx[
        "serving_cpu_vs_netty"
    ] == pytest.approx(0.1)
    table = blocks.format_table([netty, ucx])
    assert "ucx-shm" in table and "4.00" in table and "0.10" in table


def test_unknown_variant_is_refused(capsys):
    with pytest.raises(SystemExit):
        blocks.main(["--variants", "rdma"])
    assert "allowed: netty, ucx-shm, ucx-tcp" in capsys.readouterr().err
