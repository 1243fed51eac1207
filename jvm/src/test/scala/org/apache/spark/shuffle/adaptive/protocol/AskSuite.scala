package org.apache.spark.shuffle.adaptive.protocol

import java.util.concurrent.TimeUnit.NANOSECONDS
import java.util.concurrent.TimeoutException

import scala.concurrent.{Future, Promise}
import scala.concurrent.duration._

import org.scalatest.funsuite.AnyFunSuite

class AskSuite extends AnyFunSuite {

  test("questions asked at once are waited for within one deadline, not one per question") {
    val silent = Seq.fill(5)(Promise[Int]().future)
    val answered = Future.successful(7)
    val started = System.nanoTime()
    val answers =
      Ask.all(
        silent.zipWithIndex.map { case (f, i) => s"owner-$i" -> f } :+ ("owner-5" -> answered),
        300.millis)
    val waitedMs = NANOSECONDS.toMillis(System.nanoTime() - started)
    assert(waitedMs >= 290 && waitedMs < 900, s"waited $waitedMs ms for 5 silent owners")
    assert(answers.map(_._1) === (0 to 5).map(i => s"owner-$i"))
    assert(answers.take(5).forall(_._2.failed.get.isInstanceOf[TimeoutException]))
    assert(answers.last._2.get === 7)
  }

  test("a failed answer is a failure, not an exception") {
    val failed = Future.failed[Int](new IllegalStateException("lost"))
    assert(Ask.all(Seq("o" -> failed), 1.second).head._2.failed.get.getMessage === "lost")
  }
}
