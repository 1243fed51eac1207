package org.apache.spark.shuffle.adaptive

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import org.json4s._
import org.json4s.jackson.JsonMethods
import org.scalatest.funsuite.AnyFunSuite

/** The JVM suites' log scanner finds in the shared cases what Python's finds. */
class SparkLogsSuite extends AnyFunSuite {

  private val cases = (JsonMethods.parse(
    new String(Files.readAllBytes(Paths.get("tests/shared/spark_log_cases.json")), UTF_8)) \
    "cases").asInstanceOf[JArray].arr

  test("the shared cases: each finding's kind and executor, in order") {
    assert(cases.size >= 7)
    cases.foreach { c =>
      val name = (c \ "name").asInstanceOf[JString].s
      val found = SparkLogs.scan((c \ "log").asInstanceOf[JString].s, "executor 1")
      val expected = (c \ "findings").asInstanceOf[JArray].arr.map { f =>
        (
          (f \ "kind").asInstanceOf[JString].s,
          (f \ "executor").toOption.map(_.asInstanceOf[JString].s))
      }
      assert(found.map(f => (f.kind, f.executor)) === expected, name)
    }
  }

  test("what a test expects is not reported; a second executor lost is") {
    val lost = SparkLogs.scan(
      "10:00:00.000 ERROR TaskSchedulerImpl: Lost executor 1 on h: killed\n" +
        "10:00:01.000 ERROR TaskSchedulerImpl: Lost executor 2 on h: killed\n",
      "driver")
    assert(SparkLogs.Expected(lostExecutors = 2).unexpected(lost).isEmpty)
    assert(SparkLogs.Expected(lostExecutors = 1).unexpected(lost) === lost)
    val injected = SparkLogs.scan(
      "10:00:00.000 ERROR Executor: Exception in task 0.0\njava.lang.RuntimeException: injected\n" +
        "\tat org.apache.spark.shuffle.adaptive.combine.CombiningShuffleWriter.write(X.scala:1)\n",
      "executor 0")
    assert(injected.size === 1)
    assert(
      SparkLogs.Expected(errors = Seq("RuntimeException: injected")).unexpected(injected).isEmpty)
  }

  test("after a kill, the dead peer's error cut by the stopping cluster's line is expected") {
    // An executor writing a fetch error's stack as the test stops the cluster: the worker's loss
    // is logged into the middle of it, and the stack's tail joins that entry.
    val cut = SparkLogs.scan(
      "10:00:00.000 ERROR RetryingBlockTransferor: Exception while beginning fetch\n" +
        "org.apache.spark.Exception: [INTERNAL_ERROR_NETWORK] The relative remote \n" +
        "10:00:00.001 ERROR WorkerWatcher: Lost connection to worker rpc endpoint w. Exiting.\n" +
        "executor(Id: 1), which maintains the block data to fetch is dead. SQLSTATE: XX000\n" +
        "\tat org.apache.spark.shuffle.adaptive.transport.NettyBlockTransport.fetch(X.scala:1)\n",
      "executor 3")
    assert(cut.map(_.kind) === Seq(SparkLogs.PluginError))
    assert(SparkLogs.Expected().withKilled.unexpected(cut).isEmpty)
    assert(SparkLogs.Expected().unexpected(cut) === cut)
  }
}
