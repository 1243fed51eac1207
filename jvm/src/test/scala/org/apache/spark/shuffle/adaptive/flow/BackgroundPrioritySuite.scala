package org.apache.spark.shuffle.adaptive.flow

import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

class BackgroundPrioritySuite extends AnyFunSuite {

  private def ownNice(): Int =
    BackgroundPriority.niceOf(
      Files.readSymbolicLink(Paths.get("/proc/thread-self")).getFileName.toString)

  test("a thread lowers its own priority, and no other thread's") {
    val before = ownNice()
    var lowered = false
    var after = 0
    val thread = new Thread(() => {
      lowered = BackgroundPriority.lowerCurrentThread(3)
      after = ownNice()
    })
    thread.start()
    thread.join()
    assert(lowered)
    assert(after === math.min(19, before + 3), "a new thread starts at its creator's nice value")
    assert(ownNice() === before)
  }
}
