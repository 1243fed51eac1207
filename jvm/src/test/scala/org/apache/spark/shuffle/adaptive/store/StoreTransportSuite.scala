package org.apache.spark.shuffle.adaptive.store

import java.io.IOException

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}

class StoreTransportSuite extends AnyFunSuite {
  private val home = BlockManagerId("a", "host-a", 1)
  private val holder = BlockManagerId("b", "host-b", 2)
  private val spilled = ShuffleBlockId(0, 1, 0)
  private val own = ShuffleBlockId(0, 2, 0)

  /** Serves every block except `failing`; records whom it was asked for what. */
  private final class Recording(name0: String, failing: Set[BlockId] = Set.empty)
      extends BlockTransport {
    val asked = mutable.ArrayBuffer.empty[(BlockManagerId, Seq[BlockId])]
    val diagnosed = mutable.ArrayBuffer.empty[BlockManagerId]
    override def name: String = name0
    override def fetch(
        address: BlockManagerId,
        ids: Seq[BlockId],
        listener: TransportListener,
        downloads: Option[DownloadFileManager]): Unit = {
      asked += address -> ids
      ids.foreach { id =>
        if (failing(id)) listener.onFailed(id, new IOException(s"$id is gone"))
        else listener.onFetched(id, new NioManagedBuffer(java.nio.ByteBuffer.allocate(1)), name)
      }
    }
    override def diagnoseCorruption(
        address: BlockManagerId,
        block: ShuffleBlockId,
        checksum: Long,
        algorithm: String): Cause = {
      diagnosed += address
      Cause.UNKNOWN_ISSUE
    }
  }

  private final class Events extends TransportListener {
    val fetched = mutable.ArrayBuffer.empty[(BlockId, String)]
    val failed = mutable.ArrayBuffer.empty[BlockId]
    val fellBack = mutable.ArrayBuffer.empty[BlockId]
    override def onFetched(id: BlockId, buf: ManagedBuffer, via: String): Unit =
      fetched += id -> via
    override def onFailed(id: BlockId, e: Throwable): Unit = failed += id
    override def onFellBack(id: BlockId, e: Throwable): Unit = fellBack += id
  }

  private val keptAtHome = ShuffleBlockId(0, 2, 1)
  private val routes = StoreRoutes(Map(spilled -> home), Set(spilled, keptAtHome))

  test(
    "a spilled block goes to its holder over the network; the holder's own blocks go the usual way") {
    val network = new Recording("netty")
    val chain = new Recording("ucx")
    val events = new Events
    new StoreTransport(routes, network, chain).fetch(holder, Seq(spilled, own), events, None)
    assert(network.asked === Seq(holder -> Seq(spilled)))
    assert(chain.asked === Seq(holder -> Seq(own)))
    assert(events.fetched.toSet === Set(spilled -> "netty", own -> "ucx"))
  }

  test("a block its own map output's executor keeps in its store is read from that store too") {
    val network = new Recording("netty")
    val chain = new Recording("host-local")
    val events = new Events
    new StoreTransport(routes, network, chain).fetch(holder, Seq(keptAtHome, own), events, None)
    assert(network.asked === Seq(holder -> Seq(keptAtHome)))
    assert(chain.asked === Seq(holder -> Seq(own)))
    val failing = new Recording("netty", failing = Set(keptAtHome))
    val fallback = new Recording("host-local")
    new StoreTransport(routes, failing, fallback).fetch(holder, Seq(keptAtHome), new Events, None)
    assert(fallback.asked === Seq(holder -> Seq(keptAtHome)))
  }

  test("a spilled block its holder cannot serve is read from its map output's executor") {
    val network = new Recording("netty", failing = Set(spilled))
    val chain = new Recording("netty")
    val events = new Events
    new StoreTransport(routes, network, chain).fetch(holder, Seq(spilled), events, None)
    assert(chain.asked === Seq(home -> Seq(spilled)))
    assert(events.fellBack === Seq(spilled) && events.fetched.map(_._1) === Seq(spilled))
    assert(events.failed.isEmpty)
  }

  test("if its map output's executor fails too, the block fails") {
    val events = new Events
    new StoreTransport(
      routes,
      new Recording("netty", Set(spilled)),
      new Recording("netty", Set(spilled))).fetch(holder, Seq(spilled), events, None)
    assert(events.failed === Seq(spilled))
  }

  test("corruption is diagnosed by the map output's executor, which has the checksums") {
    val chain = new Recording("netty")
    new StoreTransport(routes, new Recording("netty"), chain)
      .diagnoseCorruption(holder, spilled, 1L, "ADLER32")
    assert(chain.diagnosed === Seq(home))
  }
}
