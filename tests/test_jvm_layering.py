"""The plugin's JVM packages (jvm/src/main) import one way: no package imports one that imports it back (the
architecture the README draws), and the production code imports nothing of the testkit."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = "org.apache.spark.shuffle.adaptive"
PRODUCTION = [ROOT / "jvm/src/main"]
TESTKIT_PACKAGE = "testing"


def _package_of(text: str) -> str:
    name = re.search(r"^package (\S+)", text, flags=re.MULTILINE).group(1)
    return name[len(BASE) :].lstrip(".") or "(root)"


def _imports(text: str) -> set:
    """The plugin's packages a file names: in imports and in fully qualified references."""
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)  # class names in strings are not imports
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", code, flags=re.DOTALL)
    return {
        m.lstrip(".") or "(root)" for m in re.findall(re.escape(BASE) + r"((?:\.[a-z]\w*)*)\.[A-Z{_]", code)
    }


def package_graph(roots=PRODUCTION) -> dict:
    graph: dict = {}
    for root in roots:
        for path in root.rglob("*.scala"):
            text = path.read_text(encoding="utf-8")
            package = _package_of(text)
            graph.setdefault(package, set()).update(_imports(text) - {package})
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one package (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_package_imports_one_that_imports_it_back():
    graph = package_graph()
    assert {"push.driver", "push.map", "push.owner", "push.reduce", "protocol"} <= set(graph)
    # Local reduction's rooms, laid out by job as push's are.
    assert {
        "combine.driver",
        "combine.map",
        "combine.store",
        "combine.rdd",
        "combine.reduce",
        "combine.sql",
    } <= set(graph)
    assert cycles(graph) == []


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _imports(f'import {BASE}.push.owner.MergeStore\nval s = "{BASE}.sql.X"') == {"push.owner"}


def test_production_code_names_nothing_of_the_testkit():
    assert not any(TESTKIT_PACKAGE in imported for imported in package_graph().values())
    assert TESTKIT_PACKAGE not in package_graph()


def test_the_shuffle_manager_names_nothing_of_dummy_but_its_python_facade():
    importers = {p for p, imported in package_graph().items() if "dummy" in imported}
    assert importers <= {"python"}, importers
    assert "dummy" not in package_graph()


def _sources():
    """Each production file and its code, comments left out."""
    for root in PRODUCTION:
        for path in root.rglob("*.scala"):
            text = path.read_text(encoding="utf-8")
            yield path, re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.DOTALL)


#: The session extension, which no part of the read path may name either.
SESSION_EXTENSION = "sql"
#: What each feature implements to take part in a reduce task's read and in the messages.
FEATURE_HOOKS = ("ReadPlanPart", "BundledRead", "MessageHandler")


def _features() -> set:
    """The features' packages, found by what they implement rather than listed: every package of
    each top-level room that implements a hook (push/ has driver/, map/, owner/, reduce/), and
    the session extension. A new feature joins by implementing the hooks, with no list to edit."""
    rooms = {p.split(".")[0] for hook in FEATURE_HOOKS for p in _implementers(hook)}
    return {p for p in package_graph() if p.split(".")[0] in rooms} | {SESSION_EXTENSION}


def _declares(text: str, name: str) -> bool:
    return re.search(rf"\b(?:class|trait|object) {name}\b", text) is not None


def _implementers(supertype: str) -> set:
    """The packages of the production types that extend ``supertype``."""
    return {
        _package_of(text) for _, text in _sources() if re.search(rf"(?:extends|with)\s+{supertype}\b", text)
    }


def test_what_sql_says_of_a_shuffle_reaches_the_manager_in_its_dependency_only():
    """The SQL exchange tells the shuffle manager how a shuffle combines, where its reduce tasks
    run and what it is co-partitioned with in one typed dependency, which only the driver reads
    when the shuffle is registered: no marks found by walking lineage, no plan tags read outside
    sql/, no driver calls from the plan."""
    assert "lineage" not in package_graph()
    readers = set()
    for path, text in _sources():
        package = _package_of(text)
        if re.search(r"\bTreeNodeTag\b|getTagValue|setTagValue", text):
            assert package == "sql", f"{path.name} ({package}) reads or writes a plan tag"
        if "AdaptiveShuffleDependency" in text and not _declares(text, "AdaptiveShuffleDependency"):
            readers.add(package)
        assert "RddMarks" not in text and "MarkedRows" not in text, path.name
    assert readers == {"(root)", "sql"}, readers


def test_each_feature_plans_its_own_part_of_a_read_and_answers_its_own_messages():
    """Each feature's part of a reduce task's read plan is a ReadPlanPart of its own package,
    which read/ joins without naming any feature; the resolver hands each message to the one
    feature that handles it."""
    # The features there are today are found, so that the checks below cannot pass vacuously.
    assert {"combine.reduce", "push.reduce"} <= _implementers("ReadPlanPart")
    assert {"combine.store", "push.owner"} <= _implementers("MessageHandler")
    assert {"combine.reduce", "push.reduce"} <= _implementers("BundledRead")
    graph = package_graph()
    features = _features()
    assert {
        "push.driver",
        "push.map",
        "push.owner",
        "push.reduce",
        "combine.sql",
        "combine.store",
    } <= features
    for hook in FEATURE_HOOKS:
        assert not _implementers(hook) & {"(root)", "read", "fetch", "protocol"}, hook
    assert not graph["read"] & features, graph["read"]
    assert all("read" in graph[p] for p in _implementers("ReadPlanPart"))


def _names_in(package: str, words: str) -> list:
    """The identifiers containing one of ``words`` (alternatives) that ``package``'s code names,
    outside strings and comments, each with its file's name."""
    named = []
    for path, text in _sources():
        if _package_of(text) == package:
            code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
            named += [f"{path.name}: {m}" for m in re.findall(rf"\b\w*(?:{words})\w*", code)]
    return named


def test_the_fetcher_names_no_feature():
    """fetch/ serves blocks and requests that stand for several blocks; it imports no feature
    nor read/, and its code names no bundle, chunk, combined record, push or owner."""
    graph = package_graph()
    assert not graph["fetch"] & (_features() | {"read"}), graph["fetch"]
    assert _names_in("fetch", "Bundle|Chunk|Combined|Merged|Push|Owner") == []


def test_the_shared_protocol_names_no_feature():
    """protocol/ spells messages and routes them by kind; each feature declares its own messages,
    payloads and kind numbers in its own protocol package (push/protocol, combine/protocol), so a
    new feature's messages change nothing shared."""
    graph = package_graph()
    features = _features()
    assert {"push.protocol", "combine.protocol"} <= features
    assert not graph["protocol"] & features, graph["protocol"]
    assert _names_in("protocol", "Bundle|Chunk|Combine|Merged|Push|Owner|Table|Layout") == []


def test_the_fetcher_has_one_path_for_every_kind_of_request():
    """What a reduce task requests is one typed thing (fetch/FetchItem): the fetcher asks it what
    its arrival or failure makes ready and what to request instead, and never asks which kind it
    is; no request stands for a block with a made-up map index."""
    for path, text in _sources():
        package = _package_of(text)
        if package == "fetch" and path.name != "BlockRef.scala":
            kind_branch = r"(?:is|as)InstanceOf\[BlockRef|case \w+: BlockRef|case BlockRef\("
            assert not re.search(kind_branch, text), path.name
        assert not re.search(r"BlockRef\([^)]*,\s*-1\)|,\s*-1\)\)", text), path.name


#: Every source tree whose code may name a room's types: the plugin, dummy data, the testkit, the tests.
ALL_JVM = [ROOT / "jvm/src"]
_TOP_LEVEL_SPARK_PRIVATE = re.compile(
    r"^private\[spark\]\s+(?:(?:final|sealed|abstract|case|implicit)\s+)*(?:class|trait|object)\s+(\w+)",
    flags=re.MULTILINE,
)


def _room(package: str) -> str:
    return package.split(".")[0]


def too_widely_scoped(sources) -> list:
    """The production types declared ``private[spark]`` that no code outside their room names:
    ``private[spark]`` says "other rooms use this", so a room's internals are scoped to its
    package. ``sources`` are (path, package, code) triples, production first marked by path."""
    named_in: dict = {}
    declared = []
    for path, package, code in sources:
        for word in set(re.findall(r"\b[A-Z]\w*", code)):
            named_in.setdefault(word, set()).add(package)
        if "/src/main/" in str(path):
            declared += [(path.name, package, name) for name in _TOP_LEVEL_SPARK_PRIVATE.findall(code)]
    return [
        f"{file}: {name}"
        for file, package, name in declared
        if not any(_room(other) != _room(package) for other in named_in[name])
    ]


def _all_jvm_sources():
    for root in ALL_JVM:
        for path in root.rglob("*.scala"):
            text = path.read_text(encoding="utf-8")
            code = re.sub(
                r'"(?:[^"\\\n]|\\.)*"', '""', re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.DOTALL)
            )
            yield path, _package_of(text), code


def test_only_what_other_rooms_use_is_scoped_to_spark():
    assert too_widely_scoped(_all_jvm_sources()) == []


def test_the_scope_check_finds_a_rooms_internal_scoped_to_spark():
    main = Path("jvm/src/main/scala")
    sources = [
        (main / "push/owner/Intake.scala", "push.owner", "private[spark] final class Intake"),
        (main / "push/map/Pusher.scala", "push.map", "private[spark] class Pusher { new Intake }"),
        (main / "read/ReadPlan.scala", "read", "private[spark] object ReadPlan"),
        (main / "(root)/Manager.scala", "(root)", "private[spark] class Manager { ReadPlan; Pusher }"),
    ]
    assert too_widely_scoped(sources) == ["Intake.scala: Intake", "Manager.scala: Manager"]
