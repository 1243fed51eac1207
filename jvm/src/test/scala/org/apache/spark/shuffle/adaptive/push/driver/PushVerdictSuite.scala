package org.apache.spark.shuffle.adaptive.push.driver

import org.scalatest.funsuite.AnyFunSuite

class PushVerdictSuite extends AnyFunSuite {

  private val Big = PushVerdict.MinEvidenceBytes

  test("shuffles are pulled until a pulled shuffle's reduce tasks waited for blocks long enough") {
    val verdict = new PushVerdict(waitShare = 0.2)
    assert(!verdict.decide(0))
    assert(verdict.of(0).get.why.contains("no reduce stage has yet read"))
    // A small shuffle's waits say nothing of the links.
    verdict.observed(0, stageId = 1, remoteBytes = Big - 1, share = 0.9)
    assert(!verdict.decide(1))
    verdict.observed(1, stageId = 2, remoteBytes = Big, share = 0.35)
    assert(verdict.decide(2))
    assert(
      verdict.of(2).get.why.contains("shuffle 1's reduce tasks (stage 2) waited for blocks 35%"))
    // A pushed shuffle's reads wait little by design: the verdict stays.
    verdict.observed(2, stageId = 3, remoteBytes = Big, share = 0.01)
    assert(verdict.decide(3))
    // The newest pulled shuffle decides: its reduce tasks did not wait.
    verdict.observed(1, stageId = 4, remoteBytes = Big, share = 0.05)
    assert(!verdict.decide(4))
    assert(verdict.of(4).get.why.contains("not the links"))
    assert(
      verdict.snapshot().map { case (id, v) => id -> v("verdict") } ===
        Map(0 -> "pull", 1 -> "pull", 2 -> "push", 3 -> "push", 4 -> "pull"))
  }
}
