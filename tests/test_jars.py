import zipfile
from pathlib import Path

import pytest

import pyspark_shuffle
from pyspark_shuffle import _jars
from pyspark_shuffle._jars import JarError, JarNotFoundError, SparkVersionMismatchError

JAR41 = "pyspark-shuffle-spark4.1_2.13-0.1.0.jar"
JAR40 = "pyspark-shuffle-spark4.0_2.13-0.1.0.jar"


@pytest.mark.parametrize(
    "version, minor",
    [
        ("4.1.3", (4, 1)),
        ("4.1.0-preview2", (4, 1)),
        ("4.2.dev0", (4, 2)),
        ("3.5", (3, 5)),
        ("4.1.3+local", (4, 1)),
    ],
)
def test_spark_minor(version, minor):
    assert _jars.spark_minor(version) == minor


@pytest.mark.parametrize("version", ["", "four", "4", "4.x.1"])
def test_spark_minor_rejects(version):
    with pytest.raises(ValueError, match="not a Spark version"):
        _jars.spark_minor(version)


def test_parse_jar_name():
    jar = _jars.parse_jar_name(JAR41)
    assert (jar.spark_minor, jar.scala_binary, jar.version) == ((4, 1), "2.13", "0.1.0")
    assert _jars.parse_jar_name("spark-core_2.13-4.1.3.jar") is None


def test_select_jar_picks_the_minor():
    names = ["README.txt", JAR40, JAR41]
    assert _jars.select_jar("4.1.3", names) == JAR41
    assert _jars.select_jar("4.0.1", names, scala_binary="2.13") == JAR40


def test_select_jar_without_jar_says_how_to_build():
    with pytest.raises(JarNotFoundError, match="make jar"):
        _jars.select_jar("4.1.3", ["notes.txt"])


def test_select_jar_version_mismatch_names_the_supported_minors():
    with pytest.raises(SparkVersionMismatchError) as info:
        _jars.select_jar("3.5.1", [JAR41, JAR40])
    message = str(info.value)
    assert "supports Spark 4.0, 4.1 (Scala 2.13)" in message and "pyspark 3.5.1" in message
    assert "pip install 'pyspark>=4.0,<4.2'" in message and "jvm/spark-versions.txt" in message
    with pytest.raises(SparkVersionMismatchError, match="Scala 2.12"):
        _jars.select_jar("4.1.3", [JAR41], scala_binary="2.12")


def test_select_jar_refuses_two_candidates():
    with pytest.raises(JarError, match="stale"):
        _jars.select_jar("4.1.3", [JAR41, "pyspark-shuffle-spark4.1_2.13-0.0.9.jar"])


def make_jar(path, properties):
    with zipfile.ZipFile(path, "w") as archive:
        if properties is not None:
            archive.writestr(_jars.BUILD_PROPERTIES, properties)
    return path


def test_jar_path_reads_built_version(tmp_path):
    make_jar(tmp_path / JAR41, "# built\nspark.version=4.1.3\nscala.version = 2.13.17\nversion=0.1.0\n")
    assert _jars.read_build_properties(tmp_path / JAR41) == {
        "spark.version": "4.1.3",
        "scala.version": "2.13.17",
        "version": "0.1.0",
    }
    assert _jars.jar_path("4.1.3", tmp_path) == str((tmp_path / JAR41).resolve())


def test_jar_path_rejects_jar_built_for_another_minor(tmp_path):
    make_jar(tmp_path / JAR41, "spark.version=4.0.1\n")  # misnamed jar: properties win
    with pytest.raises(SparkVersionMismatchError, match=r"built for Spark 4\.0\.1.*pyspark is 4\.1\.3"):
        _jars.jar_path("4.1.3", tmp_path)


def test_jar_path_serves_every_patch_release_of_its_minor(tmp_path, recwarn):
    make_jar(tmp_path / JAR41, "spark.version=4.1.3\n")
    for version in ("4.1.0", "4.1.4"):
        assert _jars.jar_path(version, tmp_path) == str((tmp_path / JAR41).resolve())
    assert not recwarn.list


def test_jar_path_without_properties(tmp_path):
    make_jar(tmp_path / JAR41, None)
    with pytest.raises(JarError, match=_jars.BUILD_PROPERTIES):
        _jars.jar_path("4.1.3", tmp_path)


def test_jar_path_empty_dir(tmp_path):
    with pytest.raises(JarNotFoundError, match="make jar"):
        _jars.jar_path("4.1.3", tmp_path)


def test_bundled_jar_fits_installed_pyspark():
    import pyspark_shuffle

    path = pyspark_shuffle.jar_path()
    props = _jars.read_build_properties(path)
    assert props["spark.version"] == _jars.installed_pyspark_version()
    assert _jars.installed_scala_binary() == "2.13"


def test_dependency_jars_are_the_ucx_binding_only():
    names = [JAR41, "jucx-1.18.1.jar", "notes.txt", "jucx-sources.jar"]
    assert _jars.select_dependency_jars(names) == ["jucx-1.18.1.jar"]


def test_dependency_jar_paths_missing_says_how_to_build(tmp_path):
    with pytest.raises(_jars.JarNotFoundError, match=r"jucx.*make jar"):
        _jars.dependency_jar_paths(tmp_path)


def test_bundled_jars_include_the_ucx_binding():
    names = [Path(p).name for p in pyspark_shuffle.jar_paths()]
    assert names[1:] == ["jucx-1.18.1.jar"]
