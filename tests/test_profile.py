"""Reading the stage profiler's segments, phases of sampled stacks, flame-graph pages and the
bench's --profile tables (no JVM)."""

import json
from collections import Counter

import pytest
from bench_runs import bench_run

from pyspark_shuffle import _profiler
from pyspark_shuffle.bench import profiles
from pyspark_shuffle.profile import flamegraph_page, phase_of, phase_seconds, read_segments, stacks_by_kind
from pyspark_shuffle.profile.segments import parse_collapsed

TASK = "Executor task launch worker for task 3.0 in stage 1.0 (TID 7)"
WRITER = "org/apache/spark/shuffle/sort/BypassMergeSortShuffleWriter.write"
PLUGIN_WRITER = "org/apache/spark/shuffle/adaptive/combine/CombiningShuffleWriter.write"


@pytest.mark.parametrize(
    "thread, frames, phase",
    [
        # The frame nearest the leaf that a rule names decides: Spark's compression under the
        # plugin's writer is compression, the plugin's own frames above Spark's are its phase.
        (TASK, [PLUGIN_WRITER, WRITER, "net/jpountz/lz4/LZ4JNICompressor.compress"], "compress"),
        (
            TASK,
            [
                PLUGIN_WRITER,
                "org/apache/spark/shuffle/adaptive/combine/CombinedShuffle.fold",
                "org/apache/spark/sql/catalyst/expressions/UnsafeRow.copy",
            ],
            "keep/fold",
        ),
        (TASK, [WRITER, "java/util/zip/CRC32.update"], "checksum"),
        (
            TASK,
            [
                WRITER,
                "org/apache/spark/storage/DiskBlockObjectWriter.write",
                "java/io/FileOutputStream.writeBytes",
            ],
            "write",
        ),
        (
            TASK,
            [WRITER, "org/apache/spark/sql/execution/UnsafeRowSerializerInstance$$anon$1.writeValue"],
            "serialize",
        ),
        (
            TASK,
            [
                "GeneratedClass$GeneratedIteratorForCodegenStage2.hashAgg_doAggregateWithKeys_0",
                "org/apache/spark/unsafe/map/BytesToBytesMap.lookup",
            ],
            "aggregate",
        ),
        (
            TASK,
            [
                "org/apache/spark/storage/ShuffleBlockFetcherIterator.next",
                "net/jpountz/lz4/LZ4SafeDecompressor.decompress",
            ],
            "decompress",
        ),
        (TASK, ["org/apache/spark/storage/ShuffleBlockFetcherIterator.next"], "fetch"),
        (TASK, ["GeneratedClass$GeneratedIteratorForCodegenStage1.processNext"], "compute"),
        ("shuffle-push", ["org/apache/spark/shuffle/adaptive/push/map/Pusher.send"], "push send"),
        ("shuffle-server-3-1", ["io/netty/channel/nio/NioEventLoop.run"], "fetch"),
        ("shuffle-server-3-1", ["sun/nio/ch/EPollSelectorImpl.doSelect"], "network"),
        ("G1 Conc#0", ["G1ConcurrentMark::mark"], "gc"),
        ("GC Thread#1", ["anything"], "gc"),
        ("C2 CompilerThread0", ["Compile::Optimize"], "jit"),
        ("driver-heartbeater", ["java/lang/Thread.sleep"], "other"),
    ],
)
def test_phase_of_a_stack(thread, frames, phase):
    assert phase_of(thread, frames) == phase


def test_collapsed_lines_and_cpu_seconds_by_phase():
    stacks = parse_collapsed(
        f"[{TASK} tid=11];{WRITER};java/util/zip/CRC32.update 3\n"
        f"[{TASK} tid=11];{WRITER};java/util/zip/CRC32.update 2\n"
        "[GC Thread#0 tid=4];GCTaskThread::run 5\n"
        "garbage line\n"
    )
    assert stacks == Counter(
        {(TASK, (WRITER, "java/util/zip/CRC32.update")): 5, ("GC Thread#0", ("GCTaskThread::run",)): 5}
    )
    assert phase_seconds(stacks, 0.01) == pytest.approx({"checksum": 0.05, "gc": 0.05})


def write_app(tmp_path, segments, unavailable=(), app_id="app-1"):
    app = tmp_path / app_id
    app.mkdir()
    lines = []
    for i, (executor, stages, text) in enumerate(segments):
        name = f"{executor}-{i}.collapsed"
        (app / name).write_text(text)
        lines.append(
            {
                "executor": executor,
                "seq": i,
                "stages": [[s, 0] for s in stages],
                "start_ms": 1000 * i,
                "end_ms": 1000 * i + 900,
                "event": "cpu",
                "interval_ns": 10_000_000,
                "file": name,
            }
        )
    lines += [{"executor": e, "unavailable": why} for e, why in unavailable]
    (app / "segments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return app


def test_segments_are_summed_by_the_kind_of_their_stages(tmp_path):
    app = write_app(
        tmp_path,
        [
            ("0", [1], f"[{TASK} tid=1];{WRITER} 10\n"),
            ("1", [1], f"[{TASK} tid=2];{WRITER} 20\n"),
            ("0", [], "[shuffle-push tid=3];org/apache/spark/shuffle/adaptive/push/map/Pusher.send 4\n"),
            ("0", [2, 3], f"[{TASK} tid=1];GeneratedIterator.hashAgg_doAggregate 6\n"),
            ("1", [2], f"[{TASK} tid=2];GeneratedIterator.hashAgg_doAggregate 7\n"),
        ],
        unavailable=[("2", "async-profiler is not on the class path")],
    )
    segments, unavailable = read_segments(str(app))
    assert unavailable == {"2": "async-profiler is not on the class path"}
    by_kind = stacks_by_kind(segments, {1: "map", 2: "reduce", 3: "map"}.get)
    assert {kind: sum(stacks.values()) for kind, (stacks, _) in by_kind.items()} == {
        "map": 30,
        "idle": 4,
        "mixed": 6,  # a map and a reduce stage ran at once
        "reduce": 7,
    }
    summary = profiles.summarize_run(
        str(tmp_path), "app-1", [{"stage": 1, "kind": "map"}, {"stage": 2, "kind": "reduce"}]
    )
    assert summary["by_kind"]["map"] == {"partition/sort": 0.3}
    assert summary["by_kind"]["idle"] == {"push send": 0.04}
    assert summary["segments"] == 5 and summary["event"] == "cpu"


def test_waiting_for_each_executors_last_segment(tmp_path):
    write_app(tmp_path, [("0", [1], ""), ("1", [1], "")])
    # Segments end at 900 and 1900 ms.
    assert profiles.wait_for_segments(str(tmp_path), "app-1", ["0", "1"], 1000, timeout_s=0.2) == ["0"]
    assert profiles.wait_for_segments(str(tmp_path), "app-1", ["1"], 1900, timeout_s=0) == []


def test_a_run_directory_holding_an_earlier_benchs_application_reads_its_own(tmp_path):
    # The same run of an earlier bench into the same --profile directory.
    write_app(tmp_path, [("0", [1], f"[{TASK} tid=1];{WRITER} 99\n")], app_id="app-0")
    write_app(tmp_path, [("0", [1], f"[{TASK} tid=1];{WRITER} 10\n")], app_id="app-1")
    assert profiles.wait_for_segments(str(tmp_path), "app-1", ["0"], 900, timeout_s=0) == []
    summary = profiles.summarize_run(str(tmp_path), "app-1", [{"stage": 1, "kind": "map"}])
    assert summary["segments"] == 1 and summary["by_kind"]["map"] == {"partition/sort": 0.1}


def profiled_record(tmp_path, manager, map_phases, index):
    run = tmp_path / f"run{index}"
    run.mkdir()
    text = "".join(f"[{TASK} tid=1];{frames} {count}\n" for frames, count in map_phases)
    write_app(run, [("0", [1], text)])
    return bench_run(
        status="ok",
        workload="aggregate",
        manager=manager,
        stages=[{"stage": 1, "kind": "map"}],
        profile=profiles.summarize_run(str(run), "app-1", [{"stage": 1, "kind": "map"}]),
    )


def test_phase_tables_and_flame_graph_pages_put_managers_side_by_side(tmp_path):
    records = [
        profiled_record(tmp_path, "sort", [(WRITER, 100), ("GeneratedIterator.processNext", 50)], 0),
        profiled_record(
            tmp_path,
            "adaptive",
            [(WRITER, 100), ("GeneratedIterator.processNext", 50), (PLUGIN_WRITER, 30)],
            1,
        ),
    ]
    (table,) = profiles.phase_tables(records)
    lines = table.splitlines()
    assert lines[0].startswith("CPU seconds by phase, map stages: aggregate skew=0")
    assert lines[1].split() == ["phase", "sort", "adaptive", "adaptive", "-", "sort"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:]}
    assert rows["keep/fold"] == ["0.00", "0.30", "+0.30"]
    assert rows["compute"] == ["0.50", "0.50", "+0.00"]
    assert rows["total"] == ["1.50", "1.80", "+0.30", "(1.20x)"]
    (page,) = profiles.write_pages(records, str(tmp_path / "pages"))
    html = open(page).read()
    assert "<h3>map stages</h3>" in html and html.count("<svg") == 2
    assert "sort</b>: 1.50 s CPU" in html and "adaptive</b>: 1.80 s CPU" in html
    # One scale per row: the plugin's graph is wider, as it spent more.
    widths = [float(w) for w in __import__("re").findall(r'<rect x="0.0" y="0" width="([0-9.]+)"', html)]
    assert widths[0] < widths[1] and widths[1] == pytest.approx(900.0)


def test_flame_graph_frames_say_their_cpu_seconds():
    page = flamegraph_page(
        "t", [("map", [("sort", Counter({(TASK, ("a", "b")): 3, (TASK, ("a",)): 1}), 0.5)])]
    )
    assert "<title>b (1.50 s CPU, 75.0%)</title>" in page
    assert "<title>task threads (2.00 s CPU, 100.0%)</title>" in page


def test_the_profiler_jar_is_checked_and_its_platforms_known(tmp_path, monkeypatch):
    monkeypatch.setenv(_profiler.CACHE_ENV, str(tmp_path))
    (tmp_path / f"{_profiler.ARTIFACT}-{_profiler.VERSION}.jar").write_bytes(b"not the jar")
    path, why = _profiler.jar(download=False)
    assert path is None and "fetched from" in why
    monkeypatch.setattr(_profiler.platform, "machine", lambda: "sparc64")
    path, why = _profiler.jar(download=False)
    assert path is None and "no agent for" in why and "sparc64" in why


def test_unavailable_profiles_are_reported(tmp_path):
    records = [bench_run(status="ok", profile={"unavailable": {"0": "no agent", "1": "no agent"}})]
    assert profiles.unavailable_summary(records) == "profile: 2 executor(s) ran without one: no agent"
    assert profiles.unavailable_summary([bench_run(status="ok")]) is None
