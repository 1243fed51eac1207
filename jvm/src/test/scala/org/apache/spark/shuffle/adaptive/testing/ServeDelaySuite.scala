package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.{LocalSparkContext, SparkConf, SparkContext, SparkFunSuite}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.COMBINE_ENABLED
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager

class ServeDelaySuite extends SparkFunSuite with LocalSparkContext {

  test("the delay is read per executor id") {
    val conf = new SparkConf(false).set(ServeDelay.Key, "1:50, driver:7,12:3")
    assert(ServeDelay.millisFor(conf, "1") === Some(50))
    assert(ServeDelay.millisFor(conf, "driver") === Some(7))
    assert(ServeDelay.millisFor(conf, "12") === Some(3))
    assert(ServeDelay.millisFor(conf, "2") === None)
    assert(ServeDelay.millisFor(new SparkConf(false), "1") === None)
  }

  test("malformed delays are rejected naming the key") {
    val e = intercept[IllegalArgumentException] {
      new SparkConf(false).set(ServeDelay.Key.key, "1=50").get(ServeDelay.Key)
    }
    assert(e.getMessage.contains(ServeDelay.Key.key))
  }

  for (manager <- Seq(
      classOf[SlowServingAdaptiveShuffleManager],
      classOf[SlowServingSortShuffleManager])) {
    test(s"${manager.getSimpleName} serves through the delayed resolver on the slowed executor") {
      // Map-output files only: local reduction's combined records are served from memory.
      val conf = new SparkConf()
        .set(SHUFFLE_MANAGER, manager.getName)
        .set(ServeDelay.Key, "driver:1")
        .set(COMBINE_ENABLED, false)
      sc = new SparkContext("local[2]", "test", conf)
      assert(sc.env.shuffleManager.shuffleBlockResolver.isInstanceOf[DelayedShuffleBlockResolver])
      val sums = sc
        .parallelize(1 to 1000, 4)
        .map(x => (x % 10, x))
        .reduceByKey(_ + _, 3)
        .collect()
        .toMap
      assert(sums === (1 to 1000).groupBy(_ % 10).map { case (k, v) => k -> v.sum })
    }

    test(s"${manager.getSimpleName} serves through Spark's resolver elsewhere") {
      val conf = new SparkConf()
        .set(SHUFFLE_MANAGER, manager.getName)
        .set(ServeDelay.Key, "7:100")
      sc = new SparkContext("local[2]", "test", conf)
      val resolver = sc.env.shuffleManager.shuffleBlockResolver
      assert(resolver.isInstanceOf[IndexShuffleBlockResolver])
      assert(!resolver.isInstanceOf[DelayedShuffleBlockResolver])
    }
  }

  test("AdaptiveShuffleManager itself serves through Spark's resolver, the key set or not") {
    val conf = new SparkConf()
      .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
      .set(ServeDelay.Key, "driver:1")
    sc = new SparkContext("local[2]", "test", conf)
    assert(!sc.env.shuffleManager.shuffleBlockResolver.isInstanceOf[DelayedShuffleBlockResolver])
  }
}
