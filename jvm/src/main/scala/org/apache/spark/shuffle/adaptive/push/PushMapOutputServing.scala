package org.apache.spark.shuffle.adaptive.push

import java.io.File
import java.util.concurrent.TimeUnit

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.adaptive.store.{MapOutputPlacer, ShuffleStore}
import org.apache.spark.shuffle.adaptive.store.StoreRegistry.Observed
import org.apache.spark.shuffle.adaptive.transport.MapOutputServing
import org.apache.spark.util.ThreadUtils

/**
 * Shuffle-on-write (mode=push; iShuffle, section 3.2), one per executor. A committed map output
 * is announced to the driver's plan (its block sizes, for the size predictor) and queued; one
 * background thread, the pusher, places queued map outputs in order ([[MapOutputPlacer]]: each
 * block to its partition owner's store first) while the following map tasks run.
 *
 * What a map task pays: one message to the driver and an append to the queue, on its own thread;
 * no disk read, copy or network wait. What the executor pays: one thread reading map-output
 * files and sending at most the fetch settings' in-flight limit, beside its tasks. Map outputs
 * the [[PushQueue]] has no room for stay in their files and are fetched as in mode=pull.
 */
private[spark] final class PushMapOutputServing(
    placer: MapOutputPlacer,
    registry: RpcEndpointRef,
    store: ShuffleStore,
    val queue: PushQueue,
    queueChanged: () => Unit)
    extends MapOutputServing
    with Logging {

  private[this] val pusher = ThreadUtils.newDaemonSingleThreadExecutor("shuffle-push")

  override def committed(
      shuffleId: Int,
      mapId: Long,
      dataFile: File,
      offsets: Array[Long]): Unit = {
    val blocks = MapOutputPlacer.blocks(offsets)
    if (blocks.isEmpty) return
    registry.send(Observed(shuffleId, blocks.map(_._1).toArray, blocks.map(_._2).toArray))
    val pushing = blocks.take(queue.offer(blocks.map(_._2)))
    queueChanged()
    if (pushing.isEmpty) return
    val bytes = pushing.iterator.map(_._2).sum
    pusher.execute { () =>
      try {
        if (!store.isRemoved(shuffleId)) placer.place(shuffleId, mapId, dataFile, offsets, pushing)
      } catch {
        case NonFatal(e) =>
          logWarning(
            s"Could not push map output $mapId of shuffle $shuffleId; its file serves it",
            e)
      } finally {
        queue.done(bytes)
      }
    }
  }

  // unregisterShuffle empties the store and marks the shuffle removed: queued pushes of it are
  // skipped, and blocks of it still arriving are refused.
  override def removed(shuffleId: Int): Unit = ()

  override def stop(): Unit = {
    pusher.shutdownNow()
    pusher.awaitTermination(10, TimeUnit.SECONDS)
  }
}
