package org.apache.spark.shuffle.adaptive.flow

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.BlockManagerId

class SendRuleSuite extends AnyFunSuite {
  private val peer = BlockManagerId("1", "host", 7337)
  private val limits = new FlowLimits {
    override val maxReqsInFlight = 2
    override val maxBlocksInFlightPerAddress = 3
  }

  private def state(bytes: Long, requests: Int, blocksToPeer: Int, lim: Long) = new FlowState {
    override val bytesInFlight = bytes
    override val requestsInFlight = requests
    override def blocksInFlightTo(address: BlockManagerId): Int =
      if (address == peer) blocksToPeer else 0
    override val limit = lim
  }

  test("a batch fits while it stays under the limit with what is in flight") {
    assert(SendRule.fits(limits, state(60, 1, 0, 100), 40))
    assert(!SendRule.fits(limits, state(60, 1, 0, 100), 41))
  }

  test("with nothing in flight any batch leaves, even one larger than the limit") {
    assert(SendRule.fits(limits, state(0, 0, 0, 100), 1000))
  }

  test("no batch leaves once the requests in flight reach their maximum") {
    assert(!SendRule.fits(limits, state(10, 2, 0, 100), 1))
  }

  test("blocks allowed to a peer are its cap minus its blocks in flight") {
    assert(SendRule.blocksAllowed(limits, state(10, 1, 2, 100), peer) === 1)
    assert(SendRule.blocksAllowed(limits, state(10, 1, 2, 100), BlockManagerId("2", "h", 1)) === 3)
  }
}
