"""conf/configuration.md and conf_keys.json (both generated from AdaptiveShuffleConf) list exactly
the keys of configure()'s options."""

import re
from pathlib import Path

from pyspark_shuffle.configure_options import JVM_KEYS, OPTIONS

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
    assert keys == list(JVM_KEYS) == [option.key for option in OPTIONS.values()]
