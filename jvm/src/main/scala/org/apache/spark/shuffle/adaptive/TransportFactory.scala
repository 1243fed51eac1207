package org.apache.spark.shuffle.adaptive

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{TRANSPORT, Transport}
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.transport.{BlockManagerHostLocalDirs, BlockTransport, HostLocalTransport, MapOutputListener, NettyBlockTransport, RemoteMemory, RemoteRegion}
import org.apache.spark.shuffle.adaptive.transport.ucx.{UcxBlockTransport, UcxRuntime}

/**
 * Chooses how this executor serves its map outputs and how its reduce tasks read each peer's:
 * UCX one-sided reads where `spark.shuffle.adaptive.transport` allows them and the peer serves
 * through UCX, then the files of executors on this host where Spark reads them so, then Netty.
 * Each step falls back to the next block by block.
 */
private[adaptive] final class TransportFactory(conf: SparkConf) {

  private[this] val mode = conf.get(TRANSPORT)

  /** Outer None: not tried yet. Tried on first use, within a task, when SparkEnv is complete. */
  private[this] var ucx: Option[Option[UcxRuntime]] = None

  private def ucxRuntime(): Option[UcxRuntime] = if (mode == Transport.Netty) None
  else
    synchronized {
      // With `ucx`, a failed start throws (failing the task) and is tried again by the next task.
      if (ucx.isEmpty) ucx = Some(UcxRuntime.start(SparkEnv.get))
      ucx.get
    }

  private def startedUcx: Option[UcxRuntime] = synchronized(ucx).flatten

  def listener: MapOutputListener =
    ucxRuntime().map(_.mapOutputs).getOrElse(MapOutputListener.BlockServer)

  /** Spark's block transfer service, nothing else. */
  def network(env: SparkEnv): BlockTransport = new NettyBlockTransport(
    env.blockManager.blockStoreClient)

  def forReduceTask(env: SparkEnv): BlockTransport = {
    val blockManager = env.blockManager
    val network = this.network(env)
    // Spark creates the manager exactly when it reads host-local blocks from disk.
    val files = blockManager.hostLocalDirManager match {
      case Some(dirs) =>
        new HostLocalTransport(
          blockManager.blockManagerId.host,
          new BlockManagerHostLocalDirs(blockManager, dirs),
          network)
      case None => network
    }
    overUcx(files)
  }

  /** UCX reads first, falling back to `next`, where UCX runs; else `next` alone. */
  private def overUcx(next: BlockTransport): BlockTransport = ucxRuntime() match {
    case Some(u) => new UcxBlockTransport(u.node, u.directory, u.pool, next)
    case None => next
  }

  /** Whether this executor's reduce tasks read one-sided (UCX started here). */
  def readsOneSided: Boolean = startedUcx.isDefined

  /**
   * How a reduce task reads blocks that are neither map outputs nor in files (merged chunks):
   * those of `regions`, which their holder exposed, by one-sided reads where UCX runs, the others
   * through Spark's block transfer service.
   */
  def forExposedBlocks(
      env: SparkEnv,
      regions: Map[(BlockManagerId, BlockId), RemoteRegion]): BlockTransport =
    startedUcx match {
      case Some(u) if regions.nonEmpty =>
        new UcxBlockTransport(u.node, u.directory, u.pool, network(env), regions)
      case _ => network(env)
    }

  /** What lets peers read this executor's buffers one-sided, once UCX started here. */
  def remoteMemory: Option[RemoteMemory] = startedUcx.map(_.remoteMemory)

  def removed(shuffleId: Int): Unit = startedUcx.foreach(_.mapOutputs.removed(shuffleId))

  def stop(): Unit = startedUcx.foreach(_.stop())
}
