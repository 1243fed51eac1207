package org.apache.spark.shuffle.adaptive.push

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.scalatest.concurrent.Eventually._
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.SpanSugar._

import org.apache.spark.SparkConf
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.PUSH_NICENESS
import org.apache.spark.shuffle.adaptive.flow.FlowSettings
import org.apache.spark.shuffle.adaptive.push.background.BackgroundPriority
import org.apache.spark.shuffle.adaptive.push.owner.MergeStoreSuite.receiveOf

class PushExecutorSuite extends AnyFunSuite {

  private def executor(replicated: Boolean): PushExecutor = {
    val conf = new SparkConf(false).set(PUSH_NICENESS, 3)
    new PushExecutor(conf, None, () => None, FlowSettings(conf), replicated)
  }

  /** The nice values of this process's threads named `name`. */
  private def nicesOf(name: String): Seq[Int] =
    new File("/proc/self/task").listFiles.toSeq.flatMap { task =>
      val comm =
        try new String(Files.readAllBytes(task.toPath.resolve("comm")), StandardCharsets.UTF_8)
        catch { case _: java.io.IOException => "" }
      if (comm.trim == name) Some(BackgroundPriority.niceOf(task.getName)) else None
    }

  test("runs pushed here are merged on a thread push.niceness below the tasks' priority") {
    val e = executor(replicated = false)
    try {
      receiveOf(e.merges, 0, 1, 10, 20)
      // Not summary(), which would merge on this thread what still waits.
      eventually(timeout(10.seconds))(
        assert(e.merges.serving.chunk(0, 1).map(_.size) === Some(20L)))
      assert(
        nicesOf("shuffle-merge").contains(math.min(19, BackgroundPriority.niceOfCurrentThread + 3)),
        "the merging thread runs below the thread that received the run")
      assert(e.merges.memory.used === 30)
    } finally e.stop()
  }

  test("replicated, a run is merged before its stream completes, for the map stage's summary") {
    val e = executor(replicated = true)
    try {
      receiveOf(e.merges, 0, 1, 10, 20)
      assert(Seq(0, 1).map(e.merges.serving.chunk(0, _).map(_.size)) === Seq(Some(10L), Some(20L)))
    } finally e.stop()
  }
}
