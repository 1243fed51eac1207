package org.apache.spark.shuffle.adaptive.store

import java.io.{File, IOException}
import java.nio.ByteBuffer
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.ShuffleBlockId

class ShuffleStoreSuite extends AnyFunSuite {

  private def bytesOf(buf: ManagedBuffer): Array[Byte] = {
    val in = buf.createInputStream()
    try in.readAllBytes() finally in.close()
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

  test("a streamed block is served in its pieces' order and counted as received") {
    val store = new ShuffleStore(1000, _ => ())
    val id = ShuffleBlockId(2, 5, 1)
    val stream = store.receive(id)
    assert(stream.getID === id.name)
    stream.onData(id.name, ByteBuffer.wrap(data, 0, 100))
    stream.onData(id.name, ByteBuffer.wrap(data, 100, 30))
    assert(!store.contains(id))
    stream.onComplete(id.name)
    assert(bytesOf(store.get(id).get) === data.take(130))
    assert(store.get(id).get.nioByteBuffer().remaining === 130)
    assert(store.received === 130 && store.used === 130)
  }

  test("a stream that outgrows the store fails, and a failed stream releases its bytes") {
    val store = new ShuffleStore(100, _ => ())
    val id = ShuffleBlockId(2, 5, 1)
    val stream = store.receive(id)
    stream.onData(id.name, ByteBuffer.wrap(data, 0, 80))
    intercept[IOException](stream.onData(id.name, ByteBuffer.wrap(data, 80, 30)))
    assert(store.highWater <= 100)
    stream.onFailure(id.name, new IOException("peer went away"))
    assert(store.used === 0 && !store.contains(id))
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

  test("a block placed twice keeps one copy and one reservation") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 10)
      store.putFromFile(ShuffleBlockId(1, 7, 0), file, 0, 10)
      assert(store.used === 10)
    }
  }

  test("concurrent puts never take the store over its capacity") {
    withFile(data) { file =>
      val store = new ShuffleStore(1000, _ => ())
      val threads = (0 until 8).map { t =>
        new Thread(() => (0 until 50).foreach { r =>
          store.putFromFile(ShuffleBlockId(1, t, r), file, 0, 7)
        })
      }
      threads.foreach(_.start())
      threads.foreach(_.join())
      assert(store.used <= 1000 && store.highWater <= 1000 && store.used >= 1000 - 6)
    }
  }
}
