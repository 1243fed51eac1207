"""conf/configuration.md (generated from AdaptiveShuffleConf) lists exactly the Python option keys."""

import re
from pathlib import Path

from pyspark_shuffle.configure_options import OPTIONS

DOC = Path(__file__).resolve().parents[1] / "conf" / "configuration.md"


def documented_keys(text):
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"^\|\s*Key\s*\|\s*Default\s*\|", line))
    keys = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        match = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        assert match, f"row without a key in backticks: {line!r}"
        keys.append(match.group(1))
    return keys


def test_documented_keys_match_python_options():
    text = DOC.read_text(encoding="utf-8")
    assert text.startswith("# Configuration")
    assert "| Key | Default | Since | Meaning |" in text
    keys = documented_keys(text)
    assert len(keys) == len(set(keys))
    assert set(keys) == {option.key for option in OPTIONS.values()}


CONF_SOURCE = (
    Path(__file__).resolve().parents[1]
    / "jvm/src/main/scala/org/apache/spark/shuffle/adaptive/config/AdaptiveShuffleConf.scala"
)


def jvm_choices(name):
    """The values of ``object <name>`` in AdaptiveShuffleConf, in the order of its ``All``."""
    text = CONF_SOURCE.read_text(encoding="utf-8")
    block = re.search(r"object %s \{(.*?)\n  \}" % name, text, flags=re.DOTALL).group(1)
    values = dict(re.findall(r'val (\w+) = "([^"]+)"', block))
    names = re.search(r"val All: Seq\[String\] = Seq\(([^)]*)\)", block).group(1)
    return tuple(values[n.strip()] for n in names.split(","))


def test_choices_match_the_jvm():
    from pyspark_shuffle import configure_options as python

    assert jvm_choices("FetchOrder") == python.FETCH_ORDERS
    assert jvm_choices("Transport") == python.TRANSPORTS
    assert jvm_choices("Mode") == python.MODES
    assert jvm_choices("OfferOrder") == python.OFFER_ORDERS
