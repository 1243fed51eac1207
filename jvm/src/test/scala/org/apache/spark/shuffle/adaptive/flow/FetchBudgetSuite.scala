package org.apache.spark.shuffle.adaptive.flow

import scala.collection.mutable
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

class FetchBudgetSuite extends AnyFunSuite {

  test("a budget with no reserve for each slot is refused, naming its sizes") {
    val e = intercept[IllegalArgumentException](new FetchBudget(30, 10, 4))
    assert(e.getMessage.contains("30 bytes") && e.getMessage.contains("4 slots"))
  }

  test("each reader may hold its reserve whatever the others hold; beyond it they share the rest") {
    val budget = new FetchBudget(100, 10, 4)
    val (a, b) = (budget.join(), budget.join())
    // 60 bytes are shared: the reserves of four slots keep 40.
    assert(a.fits(70) && !a.fits(71))
    a.take(70)
    assert(!b.fits(11) && b.fits(10))
    b.take(10)
    assert(budget.used === 80)
    // The shared part is a's: c, a third reader, still has its reserve.
    val c = budget.join()
    assert(c.fits(10) && !c.fits(11))
    a.give(30)
    assert(b.fits(30) && !b.fits(31))
    a.leave()
    assert(budget.used === 10 && b.fits(60) && !b.fits(61))
    // A reader that left holds nothing, whatever it is told.
    a.take(50)
    assert(budget.used === 10)
  }

  test("never exceeded by any interleaving of readers joining, taking, giving and leaving") {
    val random = new Random(5)
    (1 to 200).foreach { round =>
      val slots = 1 + random.nextInt(6)
      val reserve = 1 + random.nextInt(8)
      val budget = new FetchBudget(slots * reserve + random.nextInt(40), reserve, slots)
      val readers = mutable.ArrayBuffer.empty[(budget.Reader, mutable.Queue[Long])]
      (1 to 300).foreach { _ =>
        random.nextInt(4) match {
          case 0 if readers.size < slots => readers += budget.join() -> mutable.Queue.empty[Long]
          case 1 if readers.nonEmpty =>
            // A reader with nothing in flight always gets one increment's worth.
            val (reader, held) = readers(random.nextInt(readers.size))
            val size = 1L + random.nextInt(reserve * 3)
            if (held.isEmpty) assert(reader.fits(math.min(size, reserve)))
            if (reader.fits(size)) {
              reader.take(size)
              held += size
            }
          case 2 if readers.exists(_._2.nonEmpty) =>
            val (reader, held) = readers.filter(_._2.nonEmpty)(0)
            reader.give(held.dequeue())
          case 3 if readers.nonEmpty =>
            // A task that ends, fails or is killed gives back everything it held.
            val (reader, _) = readers.remove(random.nextInt(readers.size))
            reader.leave()
          case _ =>
        }
        assert(budget.used <= budget.capacity, s"round $round")
        assert(budget.used === readers.map(_._2.sum).sum)
      }
      readers.foreach(_._1.leave())
      assert(budget.used === 0)
    }
  }
}
