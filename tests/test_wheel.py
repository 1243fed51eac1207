import subprocess
import sys
import zipfile
from pathlib import Path

from pyspark_shuffle import _jars

ROOT = Path(__file__).resolve().parents[1]


def spark_builds():
    """(minor, Spark release) of each line of jvm/spark-versions.txt."""
    lines = (ROOT / "jvm/spark-versions.txt").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split()[:2]) for line in lines if line.strip() and not line.startswith("#")]


def test_wheel_bundles_the_jar(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )

    def testkit_jar(minor):
        return f"pyspark_shuffle/jars/testkit/pyspark-shuffle-testkit-spark{minor}_2.13-0.1.0.jar"

    (wheel,) = tmp_path.glob("pyspark_shuffle-0.1.0-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    jars = [n for n in names if n.startswith("pyspark_shuffle/jars/") and n.endswith(".jar")]
    builds = spark_builds()
    assert len(builds) >= 4
    assert sorted(jars) == sorted(
        ["pyspark_shuffle/jars/jucx-1.18.1.jar"]
        + [f"pyspark_shuffle/jars/pyspark-shuffle-spark{minor}_2.13-0.1.0.jar" for minor, _ in builds]
        + [testkit_jar(minor) for minor, _ in builds]
    )
    testkit_classes = "org/apache/spark/shuffle/adaptive/testing/"
    with zipfile.ZipFile(wheel) as archive:
        for minor, spark in builds:
            with zipfile.ZipFile(
                archive.open(f"pyspark_shuffle/jars/pyspark-shuffle-spark{minor}_2.13-0.1.0.jar")
            ) as jar:
                properties = _jars.parse_properties(jar.read(_jars.BUILD_PROPERTIES).decode())
                # The plugin jar holds no test machinery; the testkit jar holds only that.
                assert not [n for n in jar.namelist() if n.startswith(testkit_classes)]
            assert properties["spark.version"] == spark
            with zipfile.ZipFile(archive.open(testkit_jar(minor))) as testkit:
                classes = [n for n in testkit.namelist() if n.endswith(".class")]
                assert classes and all(n.startswith(testkit_classes) for n in classes)
    assert "pyspark_shuffle/testing/plugin.py" in names
    assert "pyspark_shuffle/conf_keys.json" in names  # configure()'s rules
    assert "pyspark_shuffle/spark_log_rules.json" in names  # what the log check of tests looks for
    # pyproject.toml's license, whose text ships with the wheel.
    (license,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert "Apache License" in zipfile.ZipFile(wheel).read(license).decode()
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "pyspark_shuffle.testing.plugin" in zipfile.ZipFile(wheel).read(entry_points).decode()
