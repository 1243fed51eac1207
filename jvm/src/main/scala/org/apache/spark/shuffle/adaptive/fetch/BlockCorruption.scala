package org.apache.spark.shuffle.adaptive.fetch

import java.io.{IOException, InputStream}
import java.nio.channels.ClosedByInterruptException
import java.util.zip.CheckedInputStream

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.checksum.{Cause, ShuffleChecksumHelper}
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.flow.FlowSettings
import org.apache.spark.shuffle.adaptive.transport.BlockTransport

/**
 * How one reduce task treats corrupt blocks, after Spark's `spark.shuffle.detectCorrupt*` and
 * checksum settings: the head of each block is decompressed as it is opened, so most corruption
 * shows while the block can still be fetched again; a remote block found corrupt then is fetched
 * once more; corrupt twice, or while being read, the fetch fails, with the serving executor's
 * diagnosis of the cause in the message when checksums are on.
 */
private[fetch] final class BlockCorruption(settings: FlowSettings, transport: BlockTransport)
    extends Logging {

  private[this] val refetched = mutable.HashSet.empty[BlockId]

  /**
   * `wrapped`, the decompressing or decrypting stream over `raw`, with its head read already
   * where Spark's settings ask for it (up to a third of the in-flight limit, in memory).
   */
  def readHead(raw: InputStream, wrapped: InputStream): InputStream =
    if (!(wrapped eq raw) && settings.detectCorrupt && settings.detectCorruptUseExtraMemory) {
      SparkCompat.copyStreamUpTo(wrapped, settings.maxBytesInFlight / 3)
    } else {
      wrapped
    }

  /** Whether `block`, found corrupt as it was opened, is read again: once. */
  def fetchAgain(block: BlockId): Boolean = settings.detectCorrupt && refetched.add(block)

  /**
   * Whether an error while reading a block's records fails the fetch (and Spark reruns the map
   * stage); otherwise the task sees the error as it is, as when it was interrupted.
   */
  def failsFetch(e: IOException, interrupted: Boolean): Boolean = e match {
    case _: ClosedByInterruptException => false
    case _ => !interrupted && settings.detectCorrupt
  }

  /**
   * The message a corrupt block fails with. With checksums on, computes the checksum of the
   * block's bytes as received (from a fresh stream over the still retained buffer, so the read
   * path pays nothing for checksums) and asks the serving executor whether its disk, the network
   * or something else corrupted them.
   */
  def diagnose(
      block: BlockId,
      address: BlockManagerId,
      buf: ManagedBuffer,
      e: IOException): String = block match {
    case id: ShuffleBlockId if settings.checksumEnabled =>
      val cause = try {
        val in = new CheckedInputStream(
          buf.createInputStream(),
          ShuffleChecksumHelper.getChecksumByAlgorithm(settings.checksumAlgorithm))
        try {
          val scratch = new Array[Byte](ShuffleChecksumHelper.CHECKSUM_CALCULATION_BUFFER)
          while (in.read(scratch) != -1) {}
        } finally {
          in.close()
        }
        transport.diagnoseCorruption(
          address,
          id,
          in.getChecksum.getValue,
          settings.checksumAlgorithm)
      } catch {
        case NonFatal(d) =>
          logWarning(s"Could not diagnose the corruption of $id", d)
          Cause.UNKNOWN_ISSUE
      }
      val message = cause match {
        case Cause.CHECKSUM_VERIFY_PASS =>
          s"Block $id is corrupted but checksum verification passed"
        case Cause.UNSUPPORTED_CHECKSUM_ALGORITHM =>
          s"Block $id is corrupted but its checksum algorithm " +
            s"${settings.checksumAlgorithm} is not supported by $address"
        case Cause.UNKNOWN_ISSUE => s"Block $id is corrupted but the cause is unknown"
        case other => s"Block $id is corrupted due to $other"
      }
      logError(message, e)
      message
    case id => s"Block $id is corrupted: ${e.getMessage}"
  }
}
