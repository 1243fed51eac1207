"""Finding the plugin jar bundled with this package, without a JVM.

The build (``make jar``) copies the plugin jar into ``pyspark_shuffle/jars/``, named
``pyspark-shuffle-spark<major.minor>_<scala binary>-<version>.jar``, beside its run-time
dependency (``jucx-<version>.jar``, UCX's Java binding); inside the plugin jar the resource
``pyspark-shuffle-build.properties`` records the Spark version it was compiled against. The
plugin uses Spark-internal APIs, so it only loads into the Spark minor release it was built for.

Everything here is a pure function of its arguments except :func:`jar_path`,
:func:`dependency_jar_paths` and the two
``installed_*`` helpers, which look at the installed pyspark distribution (never importing it).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple

BUILD_PROPERTIES = "pyspark-shuffle-build.properties"
JARS_DIR = Path(__file__).resolve().parent / "jars"
BUILD_HINT = "build it with `make jar` in a checkout of pyspark-shuffle"

_JAR_NAME = re.compile(
    r"^pyspark-shuffle-spark(?P<major>\d+)\.(?P<minor>\d+)_(?P<scala>\d+\.\d+)-(?P<version>.+)\.jar$"
)
_SPARK_VERSION = re.compile(r"^\s*v?(?P<major>\d+)\.(?P<minor>\d+)(?:$|[.\-+_].*$)")
_SCALA_LIBRARY = re.compile(r"^scala-library-(?P<major>\d+)\.(?P<minor>\d+)\.[^/]*\.jar$")


class JarError(RuntimeError):
    """The bundled plugin jar cannot be used."""


class JarNotFoundError(JarError):
    """No plugin jar is bundled with the package."""


class SparkVersionMismatchError(JarError):
    """The bundled plugin jar was built for another Spark release than the installed pyspark."""


@dataclass(frozen=True)
class JarName:
    """The parts of a plugin jar's file name."""

    file_name: str
    spark_minor: Tuple[int, int]
    scala_binary: str
    version: str


def spark_minor(version: str) -> Tuple[int, int]:
    """``(major, minor)`` of a Spark version string: "4.1.3", "4.1.0-preview2", "4.1.dev0" ..."""
    match = _SPARK_VERSION.match(version or "")
    if match is None:
        raise ValueError(f"not a Spark version: {version!r} (expected 'major.minor[.patch...]')")
    return int(match.group("major")), int(match.group("minor"))


def parse_jar_name(file_name: str) -> Optional[JarName]:
    """The parts of a plugin jar name, or None when ``file_name`` is not a plugin jar."""
    match = _JAR_NAME.match(Path(file_name).name)
    if match is None:
        return None
    return JarName(
        file_name=Path(file_name).name,
        spark_minor=(int(match.group("major")), int(match.group("minor"))),
        scala_binary=match.group("scala"),
        version=match.group("version"),
    )


def select_jar(
    pyspark_version: str,
    file_names: Iterable[str],
    scala_binary: Optional[str] = None,
    where: Optional[Path] = None,
) -> str:
    """Among ``file_names``, the plugin jar built for ``pyspark_version`` (and ``scala_binary``
    when given). Raises :class:`JarNotFoundError` when there is no plugin jar at all and
    :class:`SparkVersionMismatchError` when none fits."""
    wanted = spark_minor(pyspark_version)
    where = where if where is not None else JARS_DIR
    parsed = (parse_jar_name(n) for n in file_names)
    jars = sorted((j for j in parsed if j is not None), key=lambda j: j.file_name)
    if not jars:
        raise JarNotFoundError(
            f"no pyspark-shuffle plugin jar is bundled in {where}; {BUILD_HINT} "
            "(it builds a jar for each Spark minor in jvm/spark-versions.txt and copies them there)"
        )
    fitting = [j for j in jars if j.spark_minor == wanted]
    if scala_binary is not None:
        fitting = [j for j in fitting if j.scala_binary == scala_binary]
    if not fitting:
        runtime = f"pyspark {pyspark_version}" + (f" (Scala {scala_binary})" if scala_binary else "")
        scalas = ", ".join(sorted({j.scala_binary for j in jars}))
        oldest, newest = min(j.spark_minor for j in jars), max(j.spark_minor for j in jars)
        raise SparkVersionMismatchError(
            f"pyspark-shuffle supports Spark {supported_minors(jars)} (Scala {scalas}), but the "
            f"installed {runtime} is Spark {wanted[0]}.{wanted[1]}. Install a supported pyspark "
            f"(pip install 'pyspark>={oldest[0]}.{oldest[1]},<{newest[0]}.{newest[1] + 1}'), or add "
            f"Spark {wanted[0]}.{wanted[1]} to jvm/spark-versions.txt and run `make jar`."
        )
    if len(fitting) > 1:
        raise JarError(
            "several pyspark-shuffle jars fit pyspark %s: %s; remove the stale ones from %s"
            % (pyspark_version, ", ".join(j.file_name for j in fitting), where)
        )
    return fitting[0].file_name


def supported_minors(jars: Sequence[JarName]) -> str:
    """ "4.0, 4.1, 4.2, 4.3": the Spark minors ``jars`` are built for, in order."""
    return ", ".join("%d.%d" % m for m in sorted({j.spark_minor for j in jars}))


def parse_properties(text: str) -> dict:
    """The ``key=value`` (or ``key: value``) pairs of a Java properties text, without escapes."""
    result = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = _split_property(line)
        result[key] = value
    return result


def _split_property(line: str) -> Tuple[str, str, str]:
    match = re.match(r"^([^=:\s]+)\s*([=:\s])\s*(.*)$", line)
    if match is None:
        return line, "", ""
    return match.group(1), match.group(2), match.group(3)


def read_build_properties(jar: Path) -> dict:
    """The build properties resource of a plugin jar."""
    try:
        with zipfile.ZipFile(jar) as archive:
            text = archive.read(BUILD_PROPERTIES).decode("utf-8")
    except KeyError:
        raise JarError(
            f"{jar} has no {BUILD_PROPERTIES} resource; it is not a pyspark-shuffle build, {BUILD_HINT}"
        ) from None
    except (OSError, zipfile.BadZipFile) as error:
        raise JarError(f"cannot read {jar}: {error}; {BUILD_HINT}") from error
    return parse_properties(text)


def check_built_for(pyspark_version: str, properties: Mapping[str, str], jar: Path) -> None:
    """Raise :class:`SparkVersionMismatchError` when the jar was built for another Spark minor
    release than ``pyspark_version`` (the patch releases of a minor share its jar)."""
    built = properties.get("spark.version")
    if not built:
        raise JarError(f"{jar}: {BUILD_PROPERTIES} has no spark.version; {BUILD_HINT}")
    if spark_minor(built) != spark_minor(pyspark_version):
        raise SparkVersionMismatchError(
            f"{jar.name} was built for Spark {built}, but the installed pyspark is {pyspark_version}: "
            "the jar is misnamed or stale; rebuild the jars with `make jar`."
        )


def installed_pyspark_version() -> str:
    """Version of the installed pyspark distribution, read without importing pyspark."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        pass
    try:
        from pyspark.version import __version__  # pyspark on PYTHONPATH, e.g. from SPARK_HOME
    except ImportError:
        raise JarError("pyspark is not installed; install pyspark to use pyspark-shuffle") from None
    return __version__


def installed_scala_binary() -> Optional[str]:
    """Scala binary version ("2.13") of the jars shipped with the installed pyspark, if found."""
    spec = util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        jars = Path(location) / "jars"
        if jars.is_dir():
            for entry in jars.iterdir():
                match = _SCALA_LIBRARY.match(entry.name)
                if match:
                    return f"{match.group('major')}.{match.group('minor')}"
    return None


#: Run-time dependencies shipped beside the plugin jar (UCX's Java binding).
_DEPENDENCY = re.compile(r"^jucx-[0-9.]+\.jar$")


def select_dependency_jars(file_names: Iterable[str]) -> List[str]:
    """The run-time dependency jars among ``file_names``, sorted."""
    return sorted(n for n in file_names if _DEPENDENCY.match(n))


def dependency_jar_paths(jars_dir: Optional[Path] = None) -> List[str]:
    """Absolute paths of the bundled jars the plugin jar needs beside it on Spark's class path.
    Raises :class:`JarNotFoundError` when they are missing."""
    directory = Path(jars_dir) if jars_dir is not None else JARS_DIR
    names = [p.name for p in directory.glob("*.jar")] if directory.is_dir() else []
    found = select_dependency_jars(names)
    if not found:
        raise JarNotFoundError(f"UCX's Java binding (jucx-*.jar) is not bundled in {directory}; {BUILD_HINT}")
    return [str((directory / n).resolve()) for n in found]


def jar_path(pyspark_version: Optional[str] = None, jars_dir: Optional[Path] = None) -> str:
    """Absolute path of the bundled plugin jar built for the installed pyspark (or for
    ``pyspark_version``). Raises a :class:`JarError` subclass when there is none."""
    directory = Path(jars_dir) if jars_dir is not None else JARS_DIR
    version = pyspark_version or installed_pyspark_version()
    scala = installed_scala_binary() if pyspark_version is None else None
    names = [p.name for p in directory.glob("*.jar")] if directory.is_dir() else []
    jar = (directory / select_jar(version, names, scala, where=directory)).resolve()
    check_built_for(version, read_build_properties(jar), jar)
    return str(jar)


def jar_paths() -> List[str]:
    """Every jar Spark needs for the plugin, for ``spark.jars`` / ``spark-submit --jars``: the
    plugin jar for the installed pyspark, then its run-time dependencies."""
    return [jar_path(), *dependency_jar_paths()]


def testkit_jar_path(plugin_jar: str) -> str:
    """Absolute path of the testkit jar (a slow node on one machine, for tests and benchmarks:
    ``spark.shuffle.adaptive.testing.serveDelay``) built with ``plugin_jar`` (a
    :func:`jar_path`). Raises :class:`JarNotFoundError` when it is not bundled."""
    name = Path(plugin_jar).name.replace("pyspark-shuffle-spark", "pyspark-shuffle-testkit-spark", 1)
    testkit = JARS_DIR / "testkit" / name
    if not testkit.is_file():
        raise JarNotFoundError(f"the testkit jar {name} is not bundled in {testkit.parent}; {BUILD_HINT}")
    return str(testkit.resolve())
