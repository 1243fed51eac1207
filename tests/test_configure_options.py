import json
from pathlib import Path

import pytest

from pyspark_shuffle._configure import check_combinations
from pyspark_shuffle.configure_options import OPTIONS, PREFIX, choices, validate_options
from pyspark_shuffle.values import format_size, parse_size

KEY = "spark.shuffle.adaptive.fetch.inFlightIncrement"


@pytest.mark.parametrize(
    "value, normalized",
    [
        (1, "1b"),
        (1024, "1k"),
        ("512k", "512k"),
        ("8m", "8m"),
        ("8MB", "8m"),
        (" 1g ", "1g"),
        ("1536k", "1536k"),
        ("3000", "3000b"),
        (2**31 - 1, "2147483647b"),
        ("2047m", "2047m"),
    ],
)
def test_in_flight_increment_normalized(value, normalized):
    assert validate_options({"in_flight_increment": value}) == {KEY: normalized}
    assert parse_size(normalized) == parse_size(value)


@pytest.mark.parametrize("value", [0, -1, "0k", "2g", 2**31, "1.5m", "8x", "m", True, 1.0, [], "8 m"])
def test_in_flight_increment_invalid(value):
    with pytest.raises(ValueError) as info:
        validate_options({"in_flight_increment": value})
    message = str(info.value)
    assert "in_flight_increment" in message and KEY in message and repr(value) in message
    assert "512k" in message and "2147483647" in message  # what is allowed


def test_unknown_option_lists_allowed():
    with pytest.raises(ValueError) as info:
        validate_options({"in_flight_incremnt": "1m", "speed": 3})
    message = str(info.value)
    assert "'in_flight_incremnt'" in message and "'speed'" in message
    assert "in_flight_increment" in message and KEY in message


def test_none_is_skipped():
    assert validate_options({"in_flight_increment": None}) == {}


def test_table_keys_are_adaptive_keys():
    assert all(o.key.startswith("spark.shuffle.adaptive.") for o in OPTIONS.values())
    assert OPTIONS["in_flight_increment"].key == KEY


def test_format_size():
    assert [format_size(n) for n in (1, 1023, 1 << 20, 3 << 30)] == ["1b", "1023b", "1m", "3g"]
    assert parse_size("48", default_unit="m") == 48 << 20


@pytest.mark.parametrize(
    "name, value, key, normalized",
    [
        ("order", "Pairwise", "spark.shuffle.adaptive.fetch.order", "pairwise"),
        ("order", "naive", "spark.shuffle.adaptive.fetch.order", "naive"),
        ("max_in_flight", "96m", "spark.shuffle.adaptive.fetch.maxInFlight", "96m"),
        ("elastic", False, "spark.shuffle.adaptive.fetch.elastic.enabled", "false"),
        ("elastic", "TRUE", "spark.shuffle.adaptive.fetch.elastic.enabled", "true"),
        ("elastic_shrink_below", 0.25, "spark.shuffle.adaptive.fetch.elastic.shrinkBelow", "0.25"),
        ("elastic_grow_above", 2, "spark.shuffle.adaptive.fetch.elastic.growAbove", "2.0"),
        ("wait_window", 32, "spark.shuffle.adaptive.fetch.waitWindow", "32"),
        ("score_load_weight", "0", "spark.shuffle.adaptive.fetch.score.loadWeight", "0.0"),
        ("score_wait_weight", 1.5, "spark.shuffle.adaptive.fetch.score.waitWeight", "1.5"),
    ],
)
def test_fetch_options_normalized(name, value, key, normalized):
    assert validate_options({name: value}) == {key: normalized}


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("order", "random", "'adaptive', 'naive', 'pairwise', 'critical'"),
        ("order", 1, "'adaptive', 'naive', 'pairwise'"),
        ("max_in_flight", 0, "positive size"),
        ("elastic", "yes", "True or False"),
        ("elastic_shrink_below", 1.5, "between 0 and 1"),
        ("elastic_grow_above", -1, ">= 0"),
        ("elastic_grow_above", float("nan"), ">= 0"),
        ("wait_window", 0, "between 1 and 100000"),
        ("wait_window", 2.5, "whole number"),
        ("score_wait_weight", "fast", ">= 0"),
        ("score_load_weight", True, ">= 0"),
    ],
)
def test_fetch_options_invalid(name, value, allowed):
    with pytest.raises(ValueError) as info:
        validate_options({name: value})
    message = str(info.value)
    assert repr(name) in message and OPTIONS[name].key in message and allowed in message


def test_store_options():
    assert validate_options({"mode": "Push", "store_max_size": "64m"}) == {
        "spark.shuffle.adaptive.mode": "push",
        "spark.shuffle.adaptive.store.maxSize": "64m",
    }
    assert validate_options({"store_max_size": 0}) == {"spark.shuffle.adaptive.store.maxSize": "0b"}
    for name, bad, allowed in (
        ("mode", "store", "'pull', 'push'"),
        ("store_max_size", -1, ">= 0"),
    ):
        with pytest.raises(ValueError) as info:
            validate_options({name: bad})
        assert OPTIONS[name].key in str(info.value) and allowed in str(info.value)


SHARED = json.loads(
    (Path(__file__).resolve().parent / "shared" / "conf_cases.json").read_text(encoding="utf-8")
)
SHARED_CASES = SHARED["cases"]


def test_the_shared_cases_are_judged_as_the_jvm_judges_them():
    # The JVM's ValueRuleSuite runs the same cases against AdaptiveShuffleConf's entries.
    name_of = {option.key: name for name, option in OPTIONS.items()}
    assert {PREFIX + case["key"] for case in SHARED_CASES} == set(name_of)
    for case in SHARED_CASES:
        name, value = name_of[PREFIX + case["key"]], case["value"]
        try:
            validate_options({name: value})
            accepted = True
        except ValueError as error:
            accepted = False
            assert OPTIONS[name].key in str(error) and OPTIONS[name].allowed in str(error)
        assert accepted == case["accepted"], case


def test_the_shared_combinations_are_judged_as_the_jvm_judges_them():
    # The JVM's ValueRuleSuite runs the same Spark confs through config/Features and FlowSettings.
    name_of = {option.key: name for name, option in OPTIONS.items()}
    for case in SHARED["combinations"]:
        conf = case["conf"]
        options = {name_of[key]: value for key, value in conf.items() if key in name_of}
        try:
            check_combinations(validate_options(options), conf.get)
            accepted = True
        except ValueError:
            accepted = False
        assert accepted == case["accepted"], case


def test_choices_come_from_the_jvm_declarations():
    assert choices("order") == ("adaptive", "naive", "pairwise", "critical")
    assert choices("mode") == ("pull", "push", "auto")


@pytest.mark.parametrize(
    "typo, meant",
    [
        ("in_flight_incremnt", "in_flight_increment"),
        ("maxBlockSize", "push_max_block_size"),
        ("Mode", "mode"),
    ],
)
def test_an_unknown_option_names_the_nearest_known_one_before_the_list(typo, meant):
    with pytest.raises(ValueError) as info:
        validate_options({typo: "1"})
    message = str(info.value)
    assert f"{typo!r}: did you mean {meant!r}?" in message
    assert message.index("did you mean") < message.index("allowed options")


def test_an_option_like_no_other_gets_the_list_only():
    with pytest.raises(ValueError) as info:
        validate_options({"zzz": 1})
    assert "did you mean" not in str(info.value) and "allowed options" in str(info.value)
