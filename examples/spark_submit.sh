#!/usr/bin/env bash
# Runs examples/skewed_groupby.py with spark-submit, first with Spark's default sort shuffle,
# then with the plugin added by nothing more than --jars and --conf.
# Usage: examples/spark_submit.sh [--rows N]   (uses .venv when present)
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
spark_home="$("$py" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
jar="$("$py" -c 'import pyspark_shuffle; print(pyspark_shuffle.jar_path())')"
master="${MASTER:-local-cluster[2,1,1024]}"
export PYSPARK_PYTHON="$py"
# local-cluster runs on this machine only: keep driver and executors on the loopback interface.
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"

echo "== default sort shuffle"
"$spark_home/bin/spark-submit" --master "$master" --conf spark.ui.showConsoleProgress=false \
  examples/skewed_groupby.py "$@"

echo "== AdaptiveShuffleManager"
"$spark_home/bin/spark-submit" --master "$master" --conf spark.ui.showConsoleProgress=false \
  --jars "$jar" \
  --conf spark.shuffle.manager=org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager \
  --conf spark.sql.extensions=org.apache.spark.shuffle.adaptive.sql.AdaptiveShuffleExtensions \
  examples/skewed_groupby.py "$@"
