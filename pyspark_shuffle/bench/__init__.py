"""The benchmark harness behind ``python -m pyspark_shuffle bench``.

- :mod:`.config`: what an invocation runs (managers with option sets, workloads, Spark settings).
- :mod:`.command_line`: the command line that builds it (sizes, skews, --conf, --cluster).
- :mod:`.runner`: the run plan (managers alternating) and one child process per run.
- :mod:`.one_run` / :mod:`.workloads`: inside a run, the Spark application and its workload
  (sessions from :mod:`pyspark_shuffle.sessions`, as the pytest plugin's).
- :mod:`.sparkmetrics`: Spark's numbers from the application's REST API.
- :mod:`.tables` / :mod:`.plot`: medians, ratios to sort, the tables and the PNGs.
"""

from .cli import main

__all__ = ["main"]
