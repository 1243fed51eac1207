package org.apache.spark.shuffle.adaptive.push.map

import org.scalatest.funsuite.AnyFunSuite

class PushQueueSuite extends AnyFunSuite {

  test("a map output's blocks are taken in order while they fit; the rest are left to pull") {
    val queue = new PushQueue(100)
    assert(queue.offer(Seq(40, 30, 50, 10)) === 2)
    assert(queue.bytesQueued === 70 && queue.bytesRefused === 60)
    assert(queue.offer(Seq(40)) === 0, "a full queue takes nothing")
    queue.done(70)
    assert(queue.offer(Seq(40, 60)) === 2)
    assert(queue.bytesHighWater === 100 && queue.bytesRefused === 100)
  }

  test("a queue of 0 bytes pushes nothing") {
    val queue = new PushQueue(0)
    assert(queue.offer(Seq(1)) === 0 && queue.bytesHighWater === 0)
  }
}
