package org.apache.spark.shuffle.adaptive.transport.ucx

import java.io.File
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import java.nio.file.StandardOpenOption

import scala.collection.mutable
import scala.util.control.NonFatal

import org.openucx.jucx.ucp.UcpMemory

import org.apache.spark.internal.Logging
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry.RegisterRegion
import org.apache.spark.storage.StorageUtils
import org.apache.spark.shuffle.adaptive.transport.MapOutputListener

/**
 * Serves this executor's map outputs to one-sided reads: each committed data file is mapped
 * read-only into memory, registered with UCX, and its region (address, packed key, index)
 * published to the driver's [[UcxRegistry]] before the map task returns. Regions are
 * deregistered and unmapped when their shuffle is unregistered and when the executor stops.
 *
 * A data file longer than 2 GiB (the most one Java mapping holds) is not registered; peers read
 * it through Netty.
 */
private[ucx] final class UcxMapOutputs(
    executorId: String,
    node: UcxNode,
    registry: RpcEndpointRef,
    directory: UcxDirectory)
    extends MapOutputListener
    with Logging {

  /** Registered memory: a file's mapping, unmapped when released. */
  private final class Mapped(val memory: UcpMemory, val buffer: ByteBuffer)

  private[this] val mapped = mutable.HashMap.empty[Int, mutable.ArrayBuffer[Mapped]]

  /** Map outputs (shuffle, map) with a region here: a second one would shadow the first. */
  private[this] val published = mutable.HashSet.empty[(Int, Long)]

  override def committed(
      shuffleId: Int,
      mapId: Long,
      dataFile: File,
      offsets: Array[Long]): Unit = {
    val length = offsets.last
    if (length > 0 && length <= UcxBlockTransport.MaxRead && dataFile.length() == length) {
      val mapping = FileChannel.open(dataFile.toPath, StandardOpenOption.READ)
      val buffer =
        try mapping.map(FileChannel.MapMode.READ_ONLY, 0, length)
        finally mapping.close()
      val registered = try {
        register(shuffleId, mapId, buffer, offsets).exists { region =>
          registry.askSync[Boolean](RegisterRegion(executorId, shuffleId, mapId, region))
        }
      } catch {
        case NonFatal(e) =>
          logWarning(
            s"Map output $mapId of shuffle $shuffleId is served through Netty: " +
              "registering it with UCX failed",
            e)
          false
      }
      if (!registered) logDebug(s"Map output $mapId of shuffle $shuffleId has no UCX region")
    }
  }

  /** None if the map output has a region here already. */
  private def register(
      shuffleId: Int,
      mapId: Long,
      buffer: ByteBuffer,
      offsets: Array[Long]): Option[UcxRegion] = {
    if (!synchronized(published.add((shuffleId, mapId)))) return None
    val memory = node.register(buffer)
    synchronized(
      mapped.getOrElseUpdate(shuffleId, mutable.ArrayBuffer.empty) +=
        new Mapped(memory, buffer))
    Some(UcxRegion(memory.getAddress, node.remoteKey(memory), offsets))
  }

  override def removed(shuffleId: Int): Unit = {
    val regions = synchronized {
      published.filterInPlace(_._1 != shuffleId)
      mapped.remove(shuffleId)
    }.toSeq.flatten
    regions.foreach(release)
    directory.forgetShuffle(shuffleId)
    node.forgetShuffle(shuffleId)
  }

  override def stop(): Unit = {
    val regions = synchronized {
      val all = mapped.values.flatten.toList
      mapped.clear()
      published.clear()
      all
    }
    regions.foreach(release)
  }

  private def release(region: Mapped): Unit = {
    try node.call(region.memory.deregister())
    catch {
      case NonFatal(e) => logWarning("Could not deregister a map output's UCX region", e)
    }
    // A store's buffer is the store's; only a file's mapping is ours to unmap.
    StorageUtils.dispose(region.buffer)
  }
}
