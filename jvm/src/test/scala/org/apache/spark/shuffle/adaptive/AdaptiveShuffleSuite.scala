package org.apache.spark.shuffle.adaptive

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.scalatest.BeforeAndAfterAll

import org.apache.spark.{HashPartitioner, ShuffleSuite, SparkContext}
import org.apache.spark.internal.config.{SHUFFLE_CHECKSUM_ALGORITHM, SHUFFLE_MANAGER}
import org.apache.spark.rdd.ShuffledRDD
import org.apache.spark.serializer.{JavaSerializer, KryoSerializer}

/**
 * Apache Spark's own shuffle contract (`ShuffleSuite` from spark-core's tests jar), run against
 * [[AdaptiveShuffleManager]] the way Spark's SortShuffleSuite runs it against the sort shuffle.
 * local-cluster cases start real executor JVMs from `spark.test.home` (the pip-installed
 * pyspark). No test of ShuffleSuite is excluded.
 */
class AdaptiveShuffleSuite extends ShuffleSuite with BeforeAndAfterAll with ShuffleSuiteLogsCheck {

  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
  }

  test("the configured manager is AdaptiveShuffleManager") {
    sc = new SparkContext("local", "test", conf)
    assert(sc.env.shuffleManager.isInstanceOf[AdaptiveShuffleManager])
  }

  test("unregisterShuffle removes the files of the serialized write path") {
    sc = new SparkContext("local", "test", conf)
    assertFilesRemovedOnUnregister(new KryoSerializer(conf))
  }

  test("unregisterShuffle removes the files of the deserialized write path") {
    sc = new SparkContext("local", "test", conf)
    assertFilesRemovedOnUnregister(new JavaSerializer(conf))
  }

  private def assertFilesRemovedOnUnregister(
      serializer: org.apache.spark.serializer.Serializer): Unit = {
    def allFiles = {
      val walk = Files.walk(tempDir.toPath)
      try walk.iterator.asScala.map(_.toFile).filter(_.isFile).toSet
      finally walk.close()
    }
    val rdd = sc.parallelize(1 to 10, 1).map(x => (x, x))
    val shuffled = new ShuffledRDD[Int, Int, Int](rdd, new HashPartitioner(4))
      .setSerializer(serializer)
    val before = allFiles
    shuffled.count()
    val created = allFiles -- before
    assert(
      created.map(_.getName) === Set(
        "shuffle_0_0_0.data",
        "shuffle_0_0_0.index",
        s"shuffle_0_0_0.checksum.${conf.get(SHUFFLE_CHECKSUM_ALGORITHM)}"))
    sc.env.blockManager.master.removeShuffle(0, blocking = true)
    created.foreach(f => assert(!f.exists(), s"$f was not removed"))
  }
}
