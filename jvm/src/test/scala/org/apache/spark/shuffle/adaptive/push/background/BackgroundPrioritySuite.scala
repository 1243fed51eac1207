package org.apache.spark.shuffle.adaptive.push.background

import org.scalatest.funsuite.AnyFunSuite

class BackgroundPrioritySuite extends AnyFunSuite {

  test("a thread lowers its own priority, and no other thread's") {
    val before = BackgroundPriority.niceOfCurrentThread
    var lowered = false
    var after = 0
    val thread = new Thread(() => {
      lowered = BackgroundPriority.lowerCurrentThread(3)
      after = BackgroundPriority.niceOfCurrentThread
    })
    thread.start()
    thread.join()
    assert(lowered)
    assert(after === math.min(19, before + 3), "a new thread starts at its creator's nice value")
    assert(BackgroundPriority.niceOfCurrentThread === before)
  }
}
