package org.apache.spark.shuffle.adaptive.metrics

import org.apache.spark.SparkFunSuite

/** The skew report's per-source link figures, from reduce tasks' counters. */
class SourceLinkTallySuite extends SparkFunSuite {

  private def task(read: (String, Long, Double)*): FetchCounters = {
    val c = new FetchCounters
    read.foreach { case (source, bytes, rate) =>
      c.served(source, "netty", bytes)
      if (rate > 0) c.rateObserved(source, rate)
    }
    c
  }

  test("a source's rate is the sum over its readers of each one's bytes-weighted mean") {
    val tally = new SourceLinkTally(maxPairs = 100)
    // e1 reads from e3 at 10 then 20 B/s, weighted by bytes: (100*10 + 300*20) / 400 = 17.5.
    tally.add("e1", task(("e3", 100L, 10.0)))
    tally.add("e1", task(("e3", 300L, 20.0), ("e1", 50L, 0.0)))
    tally.add("e2", task(("e3", 200L, 5.0), ("e1", 40L, 8.0)))
    assert(tally.remoteBytesBySource === Map("e3" -> 600L, "e1" -> 40L))
    assert(tally.rateBySource("e3") === 17.5 + 5.0)
    assert(tally.rateBySource("e1") === 8.0)
  }

  test("own blocks are not the source's link; a source without an observed rate has none") {
    val tally = new SourceLinkTally(maxPairs = 100)
    tally.add("e1", task(("e1", 500L, 0.0), ("e2", 70L, 0.0)))
    assert(tally.remoteBytesBySource === Map("e2" -> 70L))
    assert(tally.rateBySource === Map.empty)
  }

  test("beyond maxPairs the rates are left out (never understated), the bytes are kept") {
    val tally = new SourceLinkTally(maxPairs = 2)
    tally.add("e1", task(("e2", 10L, 1.0), ("e3", 10L, 1.0)))
    tally.add("e1", task(("e2", 10L, 1.0))) // an existing pair still counts
    assert(tally.rateBySource === Map("e2" -> 1.0, "e3" -> 1.0))
    tally.add("e2", task(("e3", 10L, 1.0)))
    assert(tally.rateBySource === Map.empty)
    assert(tally.remoteBytesBySource === Map("e2" -> 20L, "e3" -> 20L))
  }

  test("a task's observed rate is weighted by the bytes it read from the source; merge adds") {
    val a = task(("e2", 100L, 10.0))
    val b = task(("e2", 300L, 30.0), ("e3", 10L, 2.0))
    a.label(FetchCounters.HostBySource, "e2", "h2")
    b.label(FetchCounters.HostBySource, "e3", "h3")
    a.merge(b)
    assert(a.observedRateBySource === Map("e2" -> 25.0, "e3" -> 2.0))
    assert(a.toMap("observed_rate_by_source") === Map("e2" -> 25.0, "e3" -> 2.0))
    assert(a.toMap("host_by_source") === Map("e2" -> "h2", "e3" -> "h3"))
  }
}
