"""examples/skewed_shuffle.ipynb runs headless as a user runs it: every cell, in a fresh kernel
(sort first, then the plugin in the same driver JVM), in a scratch directory."""

import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "skewed_shuffle.ipynb"


def test_the_example_notebook_runs(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    shutil.copy(NOTEBOOK, tmp_path)
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert re.search(r"pyspark-shuffle: [0-9.]+ s, same [0-9]+ destinations as sort", text), text
    assert "alpha" in text and "shuffle 0" in text
    assert any("image/png" in o.get("data", {}) for o in outputs), "the skew report was not shown"
    assert any("text/html" in o.get("data", {}) for o in outputs), "metrics_frame was not shown as a table"
    assert list((tmp_path / "skew-report").glob("*.png"))
