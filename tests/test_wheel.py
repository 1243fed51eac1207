import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_bundles_the_jar(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("pyspark_shuffle-0.1.0-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    jars = [n for n in names if n.startswith("pyspark_shuffle/jars/") and n.endswith(".jar")]
    assert sorted(jars) == [
        "pyspark_shuffle/jars/jucx-1.18.1.jar",
        "pyspark_shuffle/jars/pyspark-shuffle-spark4.1_2.13-0.1.0.jar",
    ]
    assert "pyspark_shuffle/testing/plugin.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "pyspark_shuffle.testing.plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()
