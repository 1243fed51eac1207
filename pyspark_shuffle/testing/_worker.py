"""Child process of :class:`~pyspark_shuffle.testing.ShuffleComparison`: one side of an A/B run.

``python -m pyspark_shuffle.testing._worker IN OUT``: reads the pickled job from IN, starts one
SparkSession (its own driver JVM, so the shuffle manager is fresh), checks the manager, runs every
workload in order, stops the session and writes the pickled outcomes to OUT.
"""

from __future__ import annotations

import pickle
import sys
import time
import traceback

from .._child_process import child_main


def run_job(job: dict) -> dict:
    from ..sessions import start_session

    spark = start_session(
        manager=job["manager"],
        conf=job["conf"],
        options=job["options"],
        master=job["master"],
        app_name=f"pyspark-shuffle-ab-{job['manager']}",
    )
    from .. import spark_logs
    from .._jvm import active_shuffle_manager_class
    from .._metrics import metrics

    outcomes = {
        "manager_class": active_shuffle_manager_class(spark),
        "results": {},
        "metrics": {},
        # Read by the parent once this process and its executors ended.
        "logs": spark_logs.of_session(spark).to_dict(),
    }
    try:
        for name, function in job["workloads"]:
            started = time.monotonic()
            try:
                value = function(spark)
                pickle.dumps(value)
                entry = {"ok": True, "value": value}
            except Exception as error:  # reported to the parent, per workload
                entry = {
                    "ok": False,
                    "error": f"{type(error).__name__}: {error}",
                    "traceback": traceback.format_exc(),
                }
            entry["seconds"] = time.monotonic() - started
            outcomes["results"][name] = entry
        outcomes["metrics"] = metrics(spark)
    finally:
        spark.stop()
    return outcomes


def _load(handle):
    from pyspark import cloudpickle

    return cloudpickle.load(handle)


main = child_main(run_job, _load, pickle.dump, binary=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
