package org.apache.spark.shuffle.adaptive.transport.ucx

import java.io.File
import java.nio.{ByteBuffer, MappedByteBuffer}
import java.nio.channels.FileChannel
import java.nio.file.{Files, StandardOpenOption}
import java.util.concurrent.{CountDownLatch, TimeUnit}

import scala.collection.mutable
import scala.util.{Random, Try}

import org.openucx.jucx.UcxUtils
import org.openucx.jucx.ucp.UcpMemory
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.UCX_LIBRARY_PATH
import org.apache.spark.storage.StorageUtils

/**
 * Two UCX nodes in this JVM, one serving a memory-mapped file, one reading it with one-sided
 * reads. Cancelled without the UCX libraries (`make test` installs them).
 */
class UcxNodeSuite extends AnyFunSuite with BeforeAndAfterAll {

  private val timeoutMs = 3000L
  private var server: UcxNode = _
  private var client: UcxNode = _
  private var file: File = _
  private var mapping: MappedByteBuffer = _
  private val bytes = new Array[Byte](3 << 20)

  override def beforeAll(): Unit = {
    val dir = sys.props.getOrElse(UCX_LIBRARY_PATH.key, "")
    assume(dir.nonEmpty && UcxLibrary.load(dir).isRight, s"no UCX libraries in '$dir'")
    new Random(7).nextBytes(bytes)
    file = File.createTempFile("ucx-node-suite", ".data")
    Files.write(file.toPath, bytes)
    val channel = FileChannel.open(file.toPath, StandardOpenOption.READ)
    mapping =
      try channel.map(FileChannel.MapMode.READ_ONLY, 0, bytes.length)
      finally channel.close()
    server = new UcxNode(timeoutMs)
    client = new UcxNode(timeoutMs)
  }

  override def afterAll(): Unit = {
    Option(client).foreach(_.stop())
    Option(server).foreach(_.stop())
    Option(file).foreach(_.delete())
  }

  private def register(node: UcxNode, buffer: ByteBuffer): (Long, Array[Byte]) = {
    val memory = node.register(buffer)
    (memory.getAddress, node.remoteKey(memory))
  }

  private def read(
      from: UcxNode,
      executorId: String,
      region: (Long, Array[Byte]),
      offset: Long,
      length: Int,
      mapId: Long = 1): (Try[Unit], Array[Byte]) = {
    val target = ByteBuffer.allocateDirect(length)
    val done = new CountDownLatch(1)
    @volatile var outcome: Try[Unit] = null
    client.read(
      executorId,
      from.address,
      (0, mapId),
      region._2,
      region._1 + offset,
      UcxUtils.getAddress(target),
      length) { result =>
      outcome = result
      done.countDown()
    }
    assert(done.await(timeoutMs * 3, TimeUnit.MILLISECONDS), "the read never completed")
    val out = new Array[Byte](length)
    target.get(out)
    (outcome, out)
  }

  test("one-sided reads return the served file's bytes at any offset") {
    val region = register(server, mapping)
    for ((offset, length) <- Seq((0L, 1 << 20), (12345L, 65536), (bytes.length - 7L, 7))) {
      val (outcome, got) = read(server, "server", region, offset, length)
      assert(outcome.isSuccess, outcome)
      assert(got.sameElements(bytes.slice(offset.toInt, offset.toInt + length)))
    }
  }

  test("a read from a stopped peer whose file is unmapped fails and returns no bytes") {
    val other = new UcxNode(timeoutMs)
    val channel = FileChannel.open(file.toPath, StandardOpenOption.READ)
    val own =
      try channel.map(FileChannel.MapMode.READ_ONLY, 0, bytes.length)
      finally channel.close()
    val region = register(other, own)
    assert(read(other, "other", region, 0, 4096, mapId = 2)._1.isSuccess)
    other.stop()
    StorageUtils.dispose(own)
    val (outcome, got) = read(other, "other", region, 0, 4096, mapId = 3)
    assert(outcome.isFailure, "reading a stopped peer must fail")
    assert(got.forall(_ == 0))
  }

  test("the buffer pool keeps at most its idle bound and reuses buffers") {
    val freed = mutable.ArrayBuffer.empty[UcpMemory]
    val pool = new UcxBufferPool(
      client.register,
      memory => { freed += memory; client.deregister(memory) },
      maxIdleBytes = 128 * 1024)
    val a = pool.acquire(100 * 1024) // 128 KiB class
    val b = pool.acquire(10) // 64 KiB class
    a.release() // kept: 128 KiB idle
    assert(freed.isEmpty)
    b.release() // would exceed the bound: freed
    assert(freed === Seq(b.memory))
    assert(!(pool.acquire(10) eq b))
    val again = pool.acquire(120 * 1024)
    assert(again eq a)
    again.release()
    pool.close()
    assert(freed.last === a.memory)
  }

  test(
    "stopped while other threads hand it work: each op runs or is refused, none is lost, nothing else throws") {
    (1 to 40).foreach { round =>
      val node = new UcxNode(timeoutMs)
      val ran = new java.util.concurrent.atomic.AtomicInteger
      val refused = new java.util.concurrent.atomic.AtomicInteger
      val attempted = new java.util.concurrent.atomic.AtomicInteger
      val failures = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]
      val started = new CountDownLatch(2)
      val threads = (1 to 2).map { _ =>
        val t = new Thread(() => {
          started.countDown()
          var go = true
          while (go) {
            attempted.incrementAndGet()
            try node.submit(ran.incrementAndGet())
            catch {
              case _: IllegalStateException => refused.incrementAndGet(); go = false
              case e: Throwable => failures.add(e); go = false
            }
          }
        })
        t.start()
        t
      }
      started.await()
      // Stopped after a different number of submits each round.
      while (attempted.get < round * 25 && failures.isEmpty && refused.get == 0) Thread.onSpinWait()
      node.stop()
      threads.foreach(_.join(timeoutMs))
      assert(failures.isEmpty, s"round $round: ${failures.peek()}")
      assert(ran.get + refused.get === attempted.get, s"round $round")
    }
  }
}
