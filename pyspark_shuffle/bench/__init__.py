"""The benchmark harness behind ``python -m pyspark_shuffle bench``.

- :mod:`.options`: the command line (managers with option sets, sizes, skews, --conf).
- :mod:`.runner`: the run plan (managers alternating) and one child process per run.
- :mod:`.child` / :mod:`.workloads`: inside a run, the Spark application and its workload.
- :mod:`.sparkmetrics`: Spark's numbers from the application's REST API.
- :mod:`.report` / :mod:`.plot`: medians, ratios to sort, the table and the PNG.
"""

from .cli import main

__all__ = ["main"]
