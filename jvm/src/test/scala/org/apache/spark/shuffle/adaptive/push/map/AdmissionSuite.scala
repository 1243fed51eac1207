package org.apache.spark.shuffle.adaptive.push.map

import org.scalatest.funsuite.AnyFunSuite

class AdmissionSuite extends AnyFunSuite {

  test("blocks are accepted in order while they fit, up to exactly the capacity") {
    assert(Admission.accepted(used = 0, capacity = 100, Seq(40, 60, 1)) === 2)
    assert(Admission.accepted(used = 50, capacity = 100, Seq(50)) === 1)
  }

  test("acceptance stops at the first block that does not fit, even if later ones would") {
    assert(Admission.accepted(used = 0, capacity = 100, Seq(30, 80, 10, 10)) === 1)
  }

  test("a full store accepts nothing; nothing offered, nothing accepted") {
    assert(Admission.accepted(used = 100, capacity = 100, Seq(1)) === 0)
    assert(Admission.accepted(used = 0, capacity = 100, Nil) === 0)
  }

  test("the count returned never puts the store over its capacity") {
    val random = new scala.util.Random(7)
    (1 to 500).foreach { _ =>
      val capacity = random.nextInt(1000).toLong
      val used = random.nextInt(1000).toLong min capacity
      val sizes = Seq.fill(random.nextInt(20))(1L + random.nextInt(200))
      val n = Admission.accepted(used, capacity, sizes)
      assert(used + sizes.take(n).sum <= capacity)
      assert(n == sizes.size || used + sizes.take(n + 1).sum > capacity)
    }
  }
}
