package org.apache.spark.shuffle.adaptive

import org.apache.spark.{HashPartitioner, LocalSparkContext, ShuffleDependency, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.col
import org.apache.spark.shuffle.adaptive.sql.{AdaptiveShuffleExtensions, ExchangesExplained}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_AUTO_WAIT_SHARE}

/**
 * mode=auto on two executors: the first shuffle is pulled (nothing has been read yet); once its
 * reduce tasks read enough from the other executor and waited (push.autoWaitShare=0 counts any
 * wait), the next is pushed. metrics(spark) says which and why.
 */
class AutoPushClusterSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  private def records(seed: Int): RDD[(Int, Array[Byte])] =
    sc.parallelize(0 until 16, 16)
      .flatMap { m =>
        val random = new java.util.Random(seed * 100 + m)
        // 6 MiB of random bytes a map task, 96 MiB in all: half crosses to the other executor.
        (0 until 96).map { k =>
          val bytes = new Array[Byte](64 * 1024)
          random.nextBytes(bytes)
          k -> bytes
        }
      }

  private def shuffled(seed: Int): RDD[(Int, Array[Byte])] =
    records(seed).partitionBy(new HashPartitioner(8))

  private def shuffleOf(rdd: RDD[_]): ShuffleDependency[_, _, _] =
    rdd.dependencies.head.asInstanceOf[ShuffleDependency[_, _, _]]

  /** Of the records, in any order. */
  private def digest(rdd: RDD[(Int, Array[Byte])]): Long =
    rdd.map { case (k, b) => k.toLong * 31 + java.util.Arrays.hashCode(b) }.reduce(_ + _)

  test("mode=auto pulls a shuffle until a pulled one's reduce tasks waited, then pushes") {
    sc = new SparkContext(
      new SparkConf()
        .setMaster("local-cluster[2,1,1024]")
        .setAppName("AutoPushClusterSuite")
        .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
        .set(MODE, "auto")
        .set(PUSH_AUTO_WAIT_SHARE, 0.0)
        // Read once, by the first session (below).
        .set("spark.sql.extensions", classOf[AdaptiveShuffleExtensions].getName))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    def owners(rdd: RDD[_]) =
      shuffleOf(rdd).shuffleHandle.asInstanceOf[AdaptiveShuffleHandle[_, _, _]].liveOwners
    def verdicts = {
      // The read report is posted while the bus delivers the stage's end.
      sc.listenerBus.waitUntilEmpty()
      sc.listenerBus.waitUntilEmpty()
      sc.env.shuffleManager
        .asInstanceOf[AdaptiveShuffleManager]
        .driver
        .get
        .metrics("push")
        .asInstanceOf[Map[String, Map[String, Any]]]
    }

    val expected = digest(records(1))
    val first = shuffled(1)
    assert(digest(first) === expected)
    assert(owners(first).isEmpty, "the first shuffle is pulled")
    val pulled = verdicts(shuffleOf(first).shuffleId.toString)
    assert(
      pulled("verdict") === "pull" && pulled("why").toString.contains("no reduce stage"),
      pulled)

    val second = shuffled(1)
    assert(digest(second) === expected)
    assert(owners(second).isDefined, "the second shuffle is pushed")
    val pushed = verdicts(shuffleOf(second).shuffleId.toString)
    assert(
      pushed("verdict") === "push" && pushed("why").toString.contains(
        s"shuffle ${shuffleOf(first).shuffleId}'s reduce tasks"),
      pushed)

    // A Spark SQL exchange's query stage, once it ran, says in explain() what auto chose.
    val spark = SparkSession
      .builder()
      .sparkContext(sc)
      .config("spark.sql.adaptive.enabled", "true")
      .getOrCreate()
    try {
      val df = spark.range(0, 1000, 1, 4).repartition(4, col("id"))
      assert(df.collect().length === 1000)
      val explained = ExchangesExplained.lines(df.queryExecution.executedPlan)
      assert(
        explained.exists(
          _.matches(".*AdaptiveExchange.*mode=auto pushed shuffle \\d+: shuffle .*")),
        explained)
    } finally SparkSession.clearActiveSession()
  }
}
