package org.apache.spark.shuffle.adaptive.fetch

import java.io.{ByteArrayInputStream, IOException}
import java.nio.channels.ClosedByInterruptException
import java.util.zip.CRC32

import org.apache.spark.SparkFunSuite
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.shuffle.adaptive.fetch.FetcherFakes.{CountingBuffer, FailingStream, FakeTransport}
import org.apache.spark.storage.{BlockManagerId, ShuffleBlockId, TestBlockId}
import org.apache.spark.shuffle.adaptive.flow.FlowSettings

/** The corruption policy of one reduce task, after Spark's detectCorrupt and checksum settings. */
class BlockCorruptionSuite extends SparkFunSuite {

  private def settings(detect: Boolean, extraMemory: Boolean = true, checksums: Boolean = false) =
    FlowSettings(
      maxBytesInFlight = 3000,
      maxReqsInFlight = Int.MaxValue,
      maxBlocksInFlightPerAddress = Int.MaxValue,
      requestSize = 100,
      maxReqSizeShuffleToMem = Long.MaxValue,
      detectCorrupt = detect,
      detectCorruptUseExtraMemory = extraMemory,
      checksumEnabled = checksums,
      checksumAlgorithm = "CRC32")

  private val block = ShuffleBlockId(1, 2, 3)
  private val source = BlockManagerId("1", "host-1", 7000)

  test("a block found corrupt as it is opened is read again once, unless detection is off") {
    val corruption = new BlockCorruption(settings(detect = true), new FakeTransport)
    assert(corruption.fetchAgain(block))
    assert(!corruption.fetchAgain(block))
    assert(corruption.fetchAgain(ShuffleBlockId(1, 3, 3)))
    val off = new BlockCorruption(settings(detect = false), new FakeTransport)
    assert(!off.fetchAgain(block))
  }

  test("a read error fails the fetch unless detection is off or the task was interrupted") {
    val on = new BlockCorruption(settings(detect = true), new FakeTransport)
    assert(on.failsFetch(new IOException("bad"), interrupted = false))
    assert(!on.failsFetch(new IOException("bad"), interrupted = true))
    assert(!on.failsFetch(new ClosedByInterruptException, interrupted = false))
    val off = new BlockCorruption(settings(detect = false), new FakeTransport)
    assert(!off.failsFetch(new IOException("bad"), interrupted = false))
  }

  test("the head of a decompressing stream is read at open only with extra memory allowed") {
    def corrupt = new FailingStream(new ByteArrayInputStream(new Array[Byte](100)), okBytes = 10)
    val raw = new ByteArrayInputStream(new Array[Byte](100))
    val eager = new BlockCorruption(settings(detect = true), new FakeTransport)
    val error = intercept[IOException](eager.readHead(raw, corrupt))
    assert(error.getMessage === FailingStream.Message)
    // Not wrapped (no codec, no encryption): nothing to decompress, the stream is left as is.
    assert(eager.readHead(raw, raw) eq raw)
    val lazyHead =
      new BlockCorruption(settings(detect = true, extraMemory = false), new FakeTransport)
    val wrapped = corrupt
    assert(lazyHead.readHead(raw, wrapped) eq wrapped)
    val off = new BlockCorruption(settings(detect = false), new FakeTransport)
    assert(off.readHead(raw, wrapped) eq wrapped)
  }

  test("with checksums the serving executor is asked what corrupted the bytes as received") {
    val bytes = Array.tabulate[Byte](500)(_.toByte)
    val transport = new FakeTransport
    transport.cause = Cause.DISK_ISSUE
    val corruption = new BlockCorruption(settings(detect = true, checksums = true), transport)
    val buf = new CountingBuffer("b", bytes, initialRefs = 1)
    val message = corruption.diagnose(block, source, buf, new IOException("bad"))
    assert(message === s"Block $block is corrupted due to DISK_ISSUE")
    val crc = new CRC32
    crc.update(bytes)
    assert(transport.diagnoses.toSeq === Seq((source, block, crc.getValue, "CRC32")))
    transport.cause = Cause.CHECKSUM_VERIFY_PASS
    assert(
      corruption.diagnose(block, source, buf, new IOException("bad")) ===
        s"Block $block is corrupted but checksum verification passed")
  }

  test("without checksums, or for a block that is not a shuffle block, no one is asked") {
    val transport = new FakeTransport
    val buf = new CountingBuffer("b", new Array[Byte](10), initialRefs = 1)
    val plain = new BlockCorruption(settings(detect = true), transport)
    assert(
      plain.diagnose(block, source, buf, new IOException("bad")) ===
        s"Block $block is corrupted: bad")
    val checked = new BlockCorruption(settings(detect = true, checksums = true), transport)
    val other = TestBlockId("x")
    assert(
      checked
        .diagnose(other, source, buf, new IOException("bad")) === s"Block $other is corrupted: bad")
    assert(transport.diagnoses.isEmpty)
  }
}
