package org.apache.spark.shuffle.adaptive.transport

import java.io.FileNotFoundException

import scala.util.{Failure, Success, Try}

import org.apache.spark.network.buffer.{FileSegmentManagedBuffer, ManagedBuffer}
import org.apache.spark.storage.{BlockId, BlockManager, BlockManagerId, HostLocalDirManager}

/** The shuffle files of other executors on this host. */
private[spark] trait HostLocalDirs {

  /** The local dirs of `address`'s executor; `found` may run on another thread. */
  def lookUp(address: BlockManagerId)(found: Try[Array[String]] => Unit): Unit

  /** The block's data from the executor's files under `dirs`, or an exception. */
  def read(blockId: BlockId, dirs: Array[String]): ManagedBuffer
}

/**
 * Spark's own lookup: the dirs come from the executor (or, with the external shuffle service on,
 * from the service, whose port the map output's address then carries) and are cached per
 * executor by the block manager's [[HostLocalDirManager]].
 */
private[spark] final class BlockManagerHostLocalDirs(
    blockManager: BlockManager,
    manager: HostLocalDirManager)
    extends HostLocalDirs {

  override def lookUp(address: BlockManagerId)(found: Try[Array[String]] => Unit): Unit = {
    val executorId = address.executorId
    manager.getCachedHostLocalDirsFor(executorId) match {
      case Some(dirs) => found(Success(dirs))
      case None =>
        manager.getHostLocalDirs(address.host, address.port, Array(executorId)) { result =>
          found(result.flatMap(_.get(executorId) match {
            case Some(dirs) => Success(dirs)
            case None =>
              Failure(
                new IllegalStateException(
                  s"$address did not report the local dirs of executor $executorId"))
          }))
        }
    }
  }

  override def read(blockId: BlockId, dirs: Array[String]): ManagedBuffer =
    blockManager.getHostLocalShuffleData(blockId, dirs) match {
      // The index was read; the data file is only opened when the task reads the block, too late
      // to fall back, so it is checked now.
      case segment: FileSegmentManagedBuffer if !segment.getFile.canRead =>
        throw new FileNotFoundException(s"cannot read ${segment.getFile} for $blockId")
      case buf => buf
    }
}
