package org.apache.spark.shuffle.adaptive.fetch

import java.io.InputStream

import io.netty.util.internal.OutOfDirectMemoryError
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.TaskContext
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.storage.{BlockId, BlockManagerId}

import AdaptiveFetchTestKit.{blk, exec}
import FetcherFakes._
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

class DirectMemoryBackoffSuite extends AnyFunSuite {

  /** Netty's error, whose constructor is package-private. */
  private def outOfDirectMemory(): Throwable = {
    val make = classOf[OutOfDirectMemoryError].getDeclaredConstructor(classOf[String])
    make.setAccessible(true)
    make.newInstance("failed to allocate 4194304 byte(s) of direct memory")
  }

  // Four 100-byte blocks, one per request; the limit lets three be in flight at once.
  private val byAddress = Seq(
    exec("1") -> Seq(blk(9, 0, 100), blk(9, 1, 100)),
    exec("2") -> Seq(blk(9, 2, 100), blk(9, 3, 100)))
  private val bytes = byAddress.flatMap(_._2).map(b => b.id.toString -> b.bytes).toMap
  private val settings = AdaptiveFetchTestKit
    .settings("naive", limit = 300, increment = 100)
    .copy(maxReqSizeShuffleToMem = 1000, maxAttemptsOnNettyOOM = 1)

  private class Task(freeDirectMemory: => Long) {
    val transport = new FakeTransport
    val backoff = new DirectMemoryBackoff(() => freeDirectMemory)
    val counters = new FetchCounters
    val context = TaskContext.empty()
    val fetcher = FetcherFakes.newFetcher(
      context,
      transport,
      new FakeLocal(BlockManagerId("self", "host-0", 1), Map.empty, Set.empty),
      byAddress.iterator.map { case (a, bs) =>
        a -> bs.map(b => (b.id: BlockId, b.declaredSize, b.mapIndex))
      },
      (_: BlockId, in: InputStream) => in,
      settings,
      settings.elasticLimit(),
      new TempShuffleReadMetrics,
      counters,
      backoff = backoff)

    def next(): String = {
      val (id, in) = fetcher.next()
      try assert(readFully(in).toSeq === bytes(id.toString).toSeq)
      finally in.close()
      id.toString
    }

    def sentBlocks: Seq[String] = transport.calls.toSeq.flatMap(_.blockIds)
  }

  /** Three requests went out; the first is refused for want of memory, the others arrive. */
  private def refuseFirst(task: Task): (String, Seq[String]) = {
    assert(task.transport.calls.size === 3)
    val first = task.transport.calls.head
    val others = task.transport.calls.toSeq.tail
    first.fail(first.blockIds.head, outOfDirectMemory())
    others.foreach(c => c.succeed(c.blockIds.head, bytes(c.blockIds.head)))
    task.transport.onFetch = c => c.blockIds.foreach(n => c.succeed(n, bytes(n)))
    (first.blockIds.head, others.map(_.blockIds.head))
  }

  test(
    "a block refused for want of direct memory is deferred, and nothing new is sent " +
      "while replies are due and memory stays short") {
    val task = new Task(freeDirectMemory = 0L)
    val (refused, arrived) = refuseFirst(task)
    val pending = bytes.keySet.diff(task.sentBlocks.toSet).head
    assert(task.backoff.active)
    assert(task.next() === arrived.head)
    // Room under the limit, but the back-off holds the pending block back.
    assert(task.sentBlocks.size === 3)
    assert(task.next() === arrived(1))
    assert(task.sentBlocks.size === 3)
    // Nothing in flight: the back-off lifts, the deferred block goes first, then the pending one.
    val rest = Seq(task.next(), task.next())
    assert(task.sentBlocks.drop(3) === Seq(refused, pending))
    assert(rest.toSet === Set(refused, pending))
    assert(!task.fetcher.hasNext)
    assert(task.counters(FetchCounters.DirectMemoryDeferrals) === 1)
    assert(!task.backoff.active)
    task.context.markTaskCompleted(None)
  }

  test("the back-off lifts as soon as a reply completes with enough direct memory free") {
    val task = new Task(freeDirectMemory = 1000L)
    val (refused, arrived) = refuseFirst(task)
    val pending = bytes.keySet.diff(task.sentBlocks.toSet).head
    assert(task.next() === arrived.head)
    assert(!task.backoff.active)
    assert(task.next() === arrived(1))
    // Asked for again while a reply was still unconsumed (with memory short, only after it).
    assert(task.sentBlocks.drop(3) === Seq(refused, pending))
    assert(Set(task.next(), task.next()) === Set(refused, pending))
    assert(task.counters(FetchCounters.DirectMemoryDeferrals) === 1)
  }

  test("a block refused again after its retries fails the fetch") {
    val task = new Task(freeDirectMemory = 0L)
    task.transport.calls.toSeq.foreach(c => c.fail(c.blockIds.head, outOfDirectMemory()))
    task.transport.onFetch = c => c.blockIds.foreach(n => c.fail(n, outOfDirectMemory()))
    val e = intercept[FetchFailedException] {
      while (task.fetcher.hasNext) task.next()
    }
    assert(e.getMessage.contains("out of Netty direct memory 2 times"))
    assert(e.getCause.isInstanceOf[OutOfDirectMemoryError])
    // Each of the three refused blocks was deferred once before one of them failed.
    assert(task.counters(FetchCounters.DirectMemoryDeferrals) === 3)
    task.context.markTaskCompleted(None)
  }

  test("an error other than direct memory fails at once, without a deferral") {
    val task = new Task(freeDirectMemory = 0L)
    val first = task.transport.calls.head
    first.fail(first.blockIds.head, new OutOfMemoryError("Java heap space"))
    intercept[FetchFailedException](task.next())
    assert(task.counters(FetchCounters.DirectMemoryDeferrals) === 0)
    assert(!task.backoff.active)
  }
}
