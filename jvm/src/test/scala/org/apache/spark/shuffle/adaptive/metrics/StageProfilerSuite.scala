package org.apache.spark.shuffle.adaptive.metrics

import java.io.File
import java.nio.file.Files

import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.concurrent.Eventually._

import org.apache.spark.{LocalSparkContext, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.shuffle.adaptive.SparkLogsCheck
import org.apache.spark.util.Utils

/** Each executor's CPU profile reaches the driver cut by stage, with the tasks' own stacks. */
class StageProfilerSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  private def segments(dir: File): Seq[JsonNode] = {
    val file = new File(dir, "segments.jsonl")
    if (!file.exists()) Nil
    else {
      val mapper = new ObjectMapper()
      Files.readAllLines(file.toPath).asScala.filter(_.nonEmpty).map(l => mapper.readTree(l)).toSeq
    }
  }

  private def stagesOf(segment: JsonNode): Set[Int] =
    segment.get("stages").elements().asScala.map(_.get(0).asInt).toSet

  test(
    "a shuffle's map and reduce stages each get their own segments, holding their tasks' stacks") {
    val base = Utils.createTempDir()
    val conf = new SparkConf()
      .set("spark.plugins", classOf[StageProfiler].getName)
      .set("spark.shuffle.adaptive.profile.dir", base.getAbsolutePath)
      .set("spark.shuffle.adaptive.profile.interval", "1ms")
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val sums = sc
      .parallelize(0 until 4, 4)
      .flatMap { m =>
        // Enough CPU in each stage for a 1 ms sampler to see it.
        Iterator.tabulate(400000)(i => ((i * 31 + m) % 1000, i.toLong))
      }
      .reduceByKey(_ + _, 4)
      .mapValues(v => (1 to 200).foldLeft(v)((a, b) => a ^ (a >>> 3) + b))
      .count()
    assert(sums === 1000)
    val dir = new File(base, sc.applicationId)

    val found = eventually(timeout(30.seconds), interval(100.millis)) {
      val found = segments(dir).filterNot(_.has("unavailable"))
      val stages = found.flatMap(stagesOf).toSet
      assert(stages === Set(0, 1), found)
      found
    }
    assert(segments(dir).forall(!_.has("unavailable")), segments(dir))
    found.foreach { s =>
      assert(Set("cpu", "itimer")(s.get("event").asText), s)
      assert(s.get("interval_ns").asLong === 1000000L, s)
      assert(s.get("end_ms").asLong >= s.get("start_ms").asLong, s)
    }
    // A segment never spans the two stages: the reduce stage's first task cut it.
    assert(found.forall(s => stagesOf(s).size === 1), found)

    def stacks(stage: Int): Seq[String] =
      found
        .filter(stagesOf(_) === Set(stage))
        .flatMap(s => Files.readAllLines(new File(dir, s.get("file").asText).toPath).asScala)
        .toSeq
    val mapStacks = stacks(0)
    val reduceStacks = stacks(1)
    assert(mapStacks.exists(l =>
      l.startsWith("[Executor task launch") && l.contains("SortShuffleWriter")))
    assert(reduceStacks.exists(l =>
      l.startsWith("[Executor task launch") && l.contains("ShuffleReader")))
    assert(!reduceStacks.exists(_.contains("SortShuffleWriter")))
  }

  test("an executor without async-profiler's library says why, and its tasks run") {
    val base = Utils.createTempDir()
    val conf = new SparkConf()
      .set("spark.plugins", classOf[StageProfiler].getName)
      .set("spark.shuffle.adaptive.profile.dir", base.getAbsolutePath)
      // async-profiler's loader takes its library from this path when it is set.
      .set(
        "spark.executor.extraJavaOptions",
        "-Done.profiler.libraryPath=/nonexistent/libasyncProfiler.so")
    sc = new SparkContext("local-cluster[1,1,1024]", "test", conf)
    assert(sc.parallelize(0 until 100, 2).map(i => (i % 10, i)).reduceByKey(_ + _).count() === 10)
    val dir = new File(base, sc.applicationId)
    eventually(timeout(30.seconds), interval(100.millis)) {
      val unavailable = segments(dir).filter(_.has("unavailable"))
      assert(unavailable.map(_.get("executor").asText) === Seq("0"))
    }
  }
}
