from pathlib import Path

from pyspark_shuffle import _ucx


def _fake_package(root: Path, libraries) -> Path:
    lib = root / "lib"
    lib.mkdir(parents=True)
    for name in libraries:
        (lib / name).write_bytes(b"")
    return root


def test_library_dir_needs_every_library(tmp_path):
    partial = _fake_package(tmp_path / "a", _ucx.LIBRARIES[:-1])
    complete = _fake_package(tmp_path / "b", _ucx.LIBRARIES)
    assert _ucx.library_dir_in([partial]) is None
    assert _ucx.library_dir_in([partial, complete]) == str((complete / "lib").resolve())


def test_library_order_matches_the_jvm_loader():
    scala = Path(__file__).resolve().parents[1] / (
        "jvm/src/main/scala/org/apache/spark/shuffle/adaptive/transport/ucx/UcxLibrary.scala"
    )
    text = scala.read_text()
    assert 'Seq("' + '", "'.join(_ucx.LIBRARIES) + '")' in text
