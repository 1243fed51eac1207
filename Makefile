# `make test` and `make demo` work on a fresh machine with Java 17, Maven and Python 3.10+:
# they create .venv, install the package, and build the plugin jar when its sources changed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
JARS_DIR := pyspark_shuffle/jars
JAR_STAMP := $(JARS_DIR)/.built
JVM_SOURCES := $(shell find jvm/src/main -type f) build.sbt project/build.properties pyproject.toml
SPARK_HOME_OF_VENV = $$($(PY) -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
UCX_LIBRARY_PATH_OF_VENV = $$($(PY) -c 'from pyspark_shuffle import _ucx; print(_ucx.library_dir() or "")')

.PHONY: test test-jvm test-python demo jar venv wheel clean

test: test-jvm test-python

# The benchmark harness at a small size: the same skewed shuffles (a Zipf hot key, skew 2) under
# Spark's sort shuffle and the plugin, results checked equal, medians and ratios printed.
demo: venv jar
	$(PY) -m pyspark_shuffle bench --managers sort,adaptive --workload groupby,dummy \
	  --skew 2 --size 256m --partition-size 16m --repeat 1

jar: $(JAR_STAMP)

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

$(JAR_STAMP): $(JVM_SOURCES)
	build/sbt package bundledJars
	rm -f $(JARS_DIR)/*.jar
	cp jvm/target/scala-2.13/pyspark-shuffle-spark*_2.13-*.jar jvm/target/bundled/*.jar $(JARS_DIR)/
	touch $@

# Spark's local-cluster executors are started from the pip-installed pyspark (spark.test.home);
# the UCX suites load UCX from the pip-installed libucx-cu11 (the test extra).
test-jvm: venv jar
	SPARK_HOME=$(SPARK_HOME_OF_VENV) UCX_LIBRARY_PATH=$(UCX_LIBRARY_PATH_OF_VENV) build/sbt test

test-python: venv jar
	$(PY) -m pytest tests

wheel: venv jar
	$(PY) -m pip wheel --no-deps --no-build-isolation -w dist .

clean:
	rm -rf jvm/target target project/target $(JARS_DIR)/*.jar $(JAR_STAMP) dist build/lib build/bdist*
