package org.apache.spark.shuffle.adaptive.push.protocol

import java.io.ByteArrayOutputStream
import java.nio.ByteBuffer
import java.nio.channels.Channels
import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.network.client.StreamCallbackWithID

/**
 * The newest owner table of each shuffle that the driver sent this executor
 * ([[OwnerPlacement]]). The pusher takes it over the one its map task carries, so a map task
 * never waits on the driver: a table that arrives late only means fewer pushes follow it.
 */
private[push] final class OwnerTableUpdates {
  private[this] val newest = new ConcurrentHashMap[Int, OwnerTable]

  def update(shuffleId: Int, table: OwnerTable): Unit =
    newest.merge(shuffleId, table, (held, sent) => if (sent.version > held.version) sent else held)

  /** The newest table of `shuffleId`: one the driver sent, or else `carried`. */
  def newestOf(shuffleId: Int, carried: OwnerTable): OwnerTable =
    Option(newest.get(shuffleId)).filter(_.version > carried.version).getOrElse(carried)

  def remove(shuffleId: Int): Unit = newest.remove(shuffleId)

  /** Receives `upload`: the table, once complete. */
  def receive(upload: TableUpload): StreamCallbackWithID = new StreamCallbackWithID {
    private[this] val bytes = new ByteArrayOutputStream
    private[this] val out = Channels.newChannel(bytes)
    override def getID: String = upload.blockId.name
    override def onData(streamId: String, piece: ByteBuffer): Unit = out.write(piece)
    override def onComplete(streamId: String): Unit =
      update(upload.shuffleId, PushPayloads.decodeTable(ByteBuffer.wrap(bytes.toByteArray)))
    override def onFailure(streamId: String, cause: Throwable): Unit = ()
  }
}
