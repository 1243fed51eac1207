"""Using the plugin from a PySpark notebook or script: one call on the session builder."""

import os

from pyspark.sql import SparkSession

import pyspark_shuffle

# A local cluster on this machine only: keep driver and executors on the loopback interface.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
builder = SparkSession.builder.master("local-cluster[2,1,1024]").appName("notebook")
spark = pyspark_shuffle.configure(builder, in_flight_increment="4m").getOrCreate()

counts = (
    spark.sparkContext.parallelize(range(1_000_000), 8)
    .map(lambda x: (0 if x % 5 else x % 100, 1))  # key 0 holds 80% of the records
    .reduceByKey(lambda a, b: a + b, 16)
    .collect()
)
print("shuffle manager:", spark.conf.get("spark.shuffle.manager"))
print("hot key count:", dict(counts)[0], "of", sum(c for _, c in counts))
spark.stop()
