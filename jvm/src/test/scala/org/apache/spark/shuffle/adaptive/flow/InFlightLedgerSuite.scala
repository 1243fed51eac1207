package org.apache.spark.shuffle.adaptive.flow

import org.apache.spark.SparkFunSuite
import org.apache.spark.storage.BlockManagerId

class InFlightLedgerSuite extends SparkFunSuite {

  private val a = BlockManagerId("a", "host-a", 1)
  private val b = BlockManagerId("b", "host-b", 1)

  test("requests, blocks per peer and bytes follow what was sent and what came back") {
    val traffic = new PeerTraffic(window = 4)
    var limit = 100L
    val ledger = new InFlightLedger(traffic, limit)
    ledger.sent(a, blocks = 3, size = 30)
    ledger.sent(b, blocks = 1, size = 5)
    assert(ledger.requestsInFlight === 2)
    assert(ledger.blocksInFlightTo(a) === 3)
    assert(ledger.bytesInFlight === 35)
    assert(traffic.inFlightTo("a") === 30 && traffic.inFlightTo("b") === 5)
    ledger.returned(a, 10, lastOfRequest = false)
    ledger.returned(a, 10, lastOfRequest = false)
    assert(ledger.requestsInFlight === 2)
    ledger.returned(a, 10, lastOfRequest = true)
    assert(ledger.requestsInFlight === 1)
    assert(ledger.blocksInFlightTo(a) === 0)
    assert(ledger.bytesInFlight === 5)
    assert(traffic.inFlightTo("a") === 0)
    limit = 7
    assert(ledger.limit === 7, "the limit is read when asked, as an elastic limit changes")
  }

  test("release takes the task's bytes back out of the executor's traffic, and only its own") {
    val traffic = new PeerTraffic(window = 4)
    val ending = new InFlightLedger(traffic, 100)
    val staying = new InFlightLedger(traffic, 100)
    ending.sent(a, blocks = 2, size = 20)
    staying.sent(a, blocks = 1, size = 8)
    ending.returned(a, 10, lastOfRequest = false)
    ending.release()
    assert(traffic.inFlightTo("a") === 8)
    ending.release()
    assert(traffic.inFlightTo("a") === 8, "a second release takes nothing more")
  }
}
