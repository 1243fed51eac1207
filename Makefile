# `make test` and `make demo` work on a fresh machine with Java 17, Maven and Python 3.10+:
# they create .venv, install the package, and build the plugin jars when their sources changed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JARS_DIR := pyspark_shuffle/jars
JAR_STAMP := $(JARS_DIR)/.built

# One plugin jar per Spark minor, each line of jvm/spark-versions.txt: minor spark scala jars tests.
SPARK_VERSIONS := jvm/spark-versions.txt
spark_column = $(shell awk '!/^\#/ && NF && $(1) {print $$$(2)}' $(SPARK_VERSIONS))
# The pyspark `make test` runs every suite on, and the minors that get the reduced set.
FULL_SPARK := $(call spark_column,$$5 == "full",2)
REDUCED_MINORS := $(call spark_column,$$5 == "reduced",1)
# The minor with every JVM suite, and the other Maven minors, which run Spark's ShuffleSuite.
FULL_MINOR := $(call spark_column,$$5 == "full",1)
MAVEN_REDUCED_MINORS := $(call spark_column,($$5 == "reduced" && $$4 == "maven"),1)
# Releases compiled against the jars of their pyspark sdist (Maven Central lacks them).
PYPI_SPARKS := $(call spark_column,$$4 == "pypi",2)
spark_of = $(shell awk '!/^\#/ && $$1 == "$(1)" {print $$2}' $(SPARK_VERSIONS))
minor_venv = .venv-spark$(1)
MINOR_VENVS := $(foreach m,$(REDUCED_MINORS),$(call minor_venv,$(m))/.installed)
PYPI_SPARK_JARS := $(foreach v,$(PYPI_SPARKS),jvm/target/spark-jars/$(v)/.complete)

JVM_SOURCES := $(shell find jvm/src/main jvm/src/dummy jvm/src/testkit -type f) build.sbt $(wildcard project/*.scala project/*.sbt) \
  project/build.properties $(SPARK_VERSIONS)
spark_home_of = $$($(1)/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
UCX_LIBRARY_PATH_OF_VENV = $$($(PY) -c 'from pyspark_shuffle import _ucx; print(_ucx.library_dir() or "")')
# Test JVMs (sbt's forked one, pyspark drivers, every executor and standalone daemon they start)
# are short-lived and run little hot code: the C1 compiler alone and the serial collector halve
# the CPU a local-cluster test costs on CI's 2 cores. The java launcher reads JDK_JAVA_OPTIONS.
TEST_JAVA_OPTIONS := -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
# local-cluster executors of each minor's suites start from that minor's pip-installed pyspark.
SPARK_HOMES = SPARK_HOME=$(call spark_home_of,$(VENV)) \
  $(foreach m,$(REDUCED_MINORS),SPARK_HOME_$(subst .,_,$(m))=$(call spark_home_of,$(call minor_venv,$(m))))

.PHONY: test test-all lint test-jvm test-jvm-matrix test-python test-python-slow test-spark-minors demo bench-driver-scale docs jar venv wheel clean

# What CI runs on every change, within 30 minutes on 2 cores.
test: lint test-jvm test-python test-spark-minors

# `make test` and the long suites: Spark's ShuffleSuite on each other Maven minor, the JVM suites
# tagged Slow (a path `make test` covers otherwise, e.g. UCX over TCP, which the namespace-cluster
# A/B reads through) and the Python suites marked slow. Run it before resolving an issue that
# touches what they cover.
test-all: test test-jvm-matrix test-python-slow

# Where the plugin does less than Spark's sort shuffle, side by side with it, in about nine minutes
# after the build: each bench runs sort and the plugin 3 times, alternating, checks their results
# equal and prints medians and ratios to sort's. First local reduction (a SQL groupBy whose keys
# repeat: the rows and bytes reduce tasks read, each stage's CPU seconds by phase, flame graphs
# under bench-profiles/), then one fetch budget per executor (8 reduce tasks an executor that
# consume slower than their blocks arrive: the memory their fetches held).
DEMO_BENCH := $(PY) -m pyspark_shuffle bench --managers sort,adaptive --skew 0 --repeat 3
DEMO_COMBINE := --workload aggregate --keys 100000 --size 32m --partition-size 1m --profile --warmup 1
DEMO_BUDGET := --workload slowreduce --executor-cores 8 --executor-memory 2g --size 256m \
  --partition-size 16m --conf spark.shuffle.readHostLocalDisk=false
demo: venv jar
	@echo "== Local reduction: a SQL groupBy(key) with sum, count and avg, 100,000 keys, warm executors (a folded row is not written: compare the profile's write and keep/fold phases)"
	$(DEMO_BENCH) $(DEMO_COMBINE)
	@echo "== One fetch budget per executor: 8 slow reduce tasks an executor"
	$(DEMO_BENCH) $(DEMO_BUDGET)

# The files generated from the JVM's declarations: conf/configuration.md and docs/metrics.md, and
# the keys and counter names Python reads (pyspark_shuffle/conf_keys.json, counters.json). Their
# suites in make test fail when one is out of date.
docs:
	build/sbt "spark41/Test/runMain org.apache.spark.shuffle.adaptive.GeneratedDocs"

# What one shuffle of 100,000 map outputs x 10,000 partitions x 1,000 executors costs the driver
# (and a reduce task's look-up of its merged partition), by simulation: no executors, figures printed.
bench-driver-scale:
	build/sbt "spark41/Test/runMain org.apache.spark.shuffle.adaptive.bench.DriverScaleBench"

jar: $(JAR_STAMP)

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(SPARK_VERSIONS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]' 'pyspark==$(FULL_SPARK)'
	# async-profiler's jar (Maven Central), for bench --profile and configure(profile_dir=...).
	$(PY) -c 'from pyspark_shuffle import _profiler; p, why = _profiler.jar(); print(p or why)'
	touch $@

# A virtualenv per other supported minor: that minor's pyspark over the main virtualenv.
.venv-spark%/.installed: $(VENV)/.installed $(SPARK_VERSIONS)
	build/minor-venv $(PYTHON) $(PY) $(@D) $(call spark_of,$*)
	touch $@

jvm/target/spark-jars/%/.complete: | venv
	PYTHON=$(PY) build/spark-jars $* $(@D)

$(JAR_STAMP): $(JVM_SOURCES) $(PYPI_SPARK_JARS)
	build/sbt package testkitJar spark41/bundledJars
	rm -f $(JARS_DIR)/*.jar $(JARS_DIR)/testkit/*.jar
	# sbt leaves a -tests jar beside a minor's jar once its test classes ran from a jar (make bench-driver-scale).
	cp $$(ls jvm/target/spark-*/scala-2.13/pyspark-shuffle-spark*_2.13-*.jar | grep -v -- '-tests\.jar$$') \
	  jvm/target/bundled/*.jar $(JARS_DIR)/
	# The testkit jars (a slow node for tests and benchmarks) apart from the plugin's.
	mkdir -p $(JARS_DIR)/testkit
	cp jvm/target/spark-*/scala-2.13/pyspark-shuffle-testkit-spark*_2.13-*.jar $(JARS_DIR)/testkit/
	touch $@

lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Every suite but those tagged Slow on the full minor; scalafmt first. The UCX suites load UCX
# from the pip-installed libucx-cu11 (the test extra).
SBT_TEST = UCX_LIBRARY_PATH=$(UCX_LIBRARY_PATH_OF_VENV) TEST_JAVA_OPTIONS="$(TEST_JAVA_OPTIONS)" build/sbt
SLOW_TAG := org.scalatest.tags.Slow
test-jvm: venv jar
	SPARK_HOME=$(call spark_home_of,$(VENV)) $(SBT_TEST) scalafmtCheckAll scalafmtSbtCheck "spark$(subst .,,$(FULL_MINOR))/testOnly * -- -l $(SLOW_TAG)"

test-jvm-matrix: venv jar $(MINOR_VENVS)
	$(SPARK_HOMES) $(SBT_TEST) "spark$(subst .,,$(FULL_MINOR))/testOnly * -- -n $(SLOW_TAG)" \
	  $(foreach m,$(MAVEN_REDUCED_MINORS),spark$(subst .,,$(m))/test)

test-python: venv jar
	JDK_JAVA_OPTIONS="$(TEST_JAVA_OPTIONS)" $(PY) -m pytest -m 'not spark_minor and not slow' --durations=25 tests

# The Python suites marked slow (a link cut on the namespace cluster, the A/B shapes make test
# compares on local-cluster only, the SQL benchmark).
test-python-slow: venv jar
	JDK_JAVA_OPTIONS="$(TEST_JAVA_OPTIONS)" $(PY) -m pytest -m 'slow and not spark_minor' --durations=10 tests

# The reduced A/B set on each other supported minor, in its own virtualenv.
test-spark-minors: jar $(MINOR_VENVS)
	$(foreach m,$(REDUCED_MINORS),JDK_JAVA_OPTIONS="$(TEST_JAVA_OPTIONS)" $(call minor_venv,$(m))/bin/python -m pytest -m spark_minor tests/integration &&) true

wheel: venv jar
	$(PY) -m pip wheel --no-deps --no-build-isolation -w dist .

clean:
	rm -rf jvm/target target project/target $(JARS_DIR)/*.jar $(JAR_STAMP) dist build/lib build/bdist*
