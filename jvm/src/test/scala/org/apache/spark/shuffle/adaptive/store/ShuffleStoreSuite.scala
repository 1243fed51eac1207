package org.apache.spark.shuffle.adaptive.store

import java.io.{File, IOException}
import java.nio.ByteBuffer
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{ShuffleBlockBatchId, ShuffleBlockId}

class ShuffleStoreSuite extends AnyFunSuite {

  private def bytesOf(buf: ManagedBuffer): Array[Byte] = {
    val in = buf.createInputStream()
    try in.readAllBytes()
    finally in.close()
  }

  private def withFile(content: Array[Byte])(f: File => Unit): Unit = {
    val file = Files.createTempFile("store", ".data").toFile
    try {
      Files.write(file.toPath, content)
      f(file)
    } finally file.delete()
  }

  private val data = Array.tabulate[Byte](300)(i => (i % 127).toByte)

  test("a block copied from its file is served with the file's bytes") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      assert(store.putFromFile(ShuffleBlockId(1, 7, 2), file, 100, 50))
      assert(bytesOf(store.get(ShuffleBlockId(1, 7, 2)).get) === data.slice(100, 150))
      assert(store.get(ShuffleBlockId(1, 7, 3)).isEmpty)
      assert(store.used === 50 && store.received === 0)
    }
  }

  test("a block that does not fit is refused and nothing is held for it") {
    withFile(data) { file =>
      val store = new ShuffleStore(120, _ => ())
      assert(store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 100))
      assert(!store.putFromFile(ShuffleBlockId(1, 7, 1), file, 100, 21))
      assert(store.putFromFile(ShuffleBlockId(1, 7, 1), file, 100, 20))
      assert(store.used === 120 && store.highWater === 120)
    }
  }

  test("a block read past its file's end fails and releases its bytes") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      intercept[IOException](store.putFromFile(ShuffleBlockId(1, 7, 0), file, 250, 100))
      assert(store.used === 0 && !store.contains(ShuffleBlockId(1, 7, 0)))
    }
  }

  private def runStream(sizes: Array[Long], file: File, offset: Long): Array[Byte] = {
    val in = new RunUpload(sizes, file, offset).createInputStream()
    try in.readAllBytes()
    finally in.close()
  }

  /** Feeds `bytes` to `stream` in pieces of `piece` bytes. */
  private def feed(
      stream: org.apache.spark.network.client.StreamCallbackWithID,
      bytes: Array[Byte],
      piece: Int): Unit =
    bytes.grouped(piece).foreach(p => stream.onData(stream.getID, ByteBuffer.wrap(p)))

  test("a run streamed in pieces of any size lands as its blocks, offered with index offsets") {
    withFile(data) { file =>
      Seq(1, 3, 7, 13, 1000).foreach { piece =>
        var offered: (ShuffleBlockBatchId, Long, Seq[Long]) = null
        val store = new ShuffleStore(
          1000,
          _ => (),
          (run, buffer, offsets) => offered = (run, buffer.remaining.toLong, offsets.toSeq))
        // Reduce partitions 2..5 of map 9: sizes 10, 0, 25, 5, taken from the file at 40.
        val run = ShuffleBlockBatchId(1, 9, 2, 6)
        val stream = store.receiveRun(run)
        feed(stream, runStream(Array(10L, 0L, 25L, 5L), file, 40), piece)
        stream.onComplete(run.name)
        assert(bytesOf(store.get(ShuffleBlockId(1, 9, 2)).get) === data.slice(40, 50))
        assert(store.get(ShuffleBlockId(1, 9, 3)).isEmpty)
        assert(bytesOf(store.get(ShuffleBlockId(1, 9, 4)).get) === data.slice(50, 75))
        assert(bytesOf(store.get(ShuffleBlockId(1, 9, 5)).get) === data.slice(75, 80))
        assert(store.used === 40 && store.received === 40)
        assert(offered === ((run, 40L, Seq(0L, 0L, 0L, 10L, 10L, 35L, 40L))))
      }
    }
  }

  test("a run that does not fit is refused at its header, holding nothing") {
    withFile(data) { file =>
      val store = new ShuffleStore(30, _ => ())
      val run = ShuffleBlockBatchId(1, 9, 0, 2)
      val stream = store.receiveRun(run)
      intercept[IOException](feed(stream, runStream(Array(20L, 20L), file, 0), 1000))
      stream.onFailure(run.name, new IOException("refused"))
      assert(store.used === 0 && store.highWater === 0)
    }
  }

  test("a run cut short, or longer than its header says, fails and releases its bytes") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      val short = ShuffleBlockBatchId(1, 9, 0, 1)
      val stream = store.receiveRun(short)
      feed(stream, runStream(Array(50L), file, 0).dropRight(1), 1000)
      intercept[IOException](stream.onComplete(short.name))
      stream.onFailure(short.name, new IOException("cut"))
      assert(store.used === 0 && !store.contains(ShuffleBlockId(1, 9, 0)))
      val long = store.receiveRun(short)
      intercept[IOException](feed(long, runStream(Array(50L), file, 0) :+ 1.toByte, 1000))
      long.onFailure(short.name, new IOException("too long"))
      assert(store.used === 0)
    }
  }

  test("a run whose header spans other partitions than its block id names is refused") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      val stream = store.receiveRun(ShuffleBlockBatchId(1, 9, 0, 3))
      intercept[IOException](feed(stream, runStream(Array(5L, 5L), file, 0), 1000))
    }
  }

  test("a run received twice keeps one copy and is offered once") {
    withFile(data) { file =>
      var offers = 0
      val store = new ShuffleStore(1000, _ => (), (_, _, _) => offers += 1)
      val run = ShuffleBlockBatchId(1, 9, 0, 1)
      (1 to 2).foreach { _ =>
        val stream = store.receiveRun(run)
        feed(stream, runStream(Array(30L), file, 0), 1000)
        stream.onComplete(run.name)
      }
      assert(store.used === 30 && offers === 1)
    }
  }

  test("removing a shuffle drops its blocks only, and reports the change") {
    withFile(data) { file =>
      var reports = 0
      val store = new ShuffleStore(1000, _ => reports += 1)
      store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 10)
      store.putFromFile(ShuffleBlockId(2, 7, 0), file, 0, 20)
      store.removeShuffle(1)
      assert(!store.contains(ShuffleBlockId(1, 7, 0)) && store.contains(ShuffleBlockId(2, 7, 0)))
      assert(store.used === 20 && reports === 3)
      store.clear()
      assert(store.used === 0)
    }
  }

  test("blocks of a removed shuffle that arrive late (pushes under way) are refused") {
    withFile(data) { file =>
      var offers = 0
      val store = new ShuffleStore(1000, _ => (), (_, _, _) => offers += 1)
      store.removeShuffle(1)
      assert(store.isRemoved(1) && !store.isRemoved(2))
      assert(!store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 10))
      val run = ShuffleBlockBatchId(1, 9, 0, 1)
      val stream = store.receiveRun(run)
      feed(stream, runStream(Array(30L), file, 0), 1000)
      stream.onComplete(run.name)
      assert(store.used === 0 && offers === 0 && !store.contains(ShuffleBlockId(1, 9, 0)))
    }
  }

  test("a block placed twice keeps one copy and one reservation") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      assert(store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 10))
      assert(!store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 10))
      assert(store.used === 10)
    }
  }

  test("concurrent puts never take the store over its capacity") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      val threads = (0 until 8).map { t =>
        new Thread(() =>
          (0 until 50).foreach { r =>
            store.putFromFile(ShuffleBlockId(1, t, r), file, 0, 7)
          })
      }
      threads.foreach(_.start())
      threads.foreach(_.join())
      assert(store.used <= 1000 && store.highWater <= 1000 && store.used >= 1000 - 6)
    }
  }
}
