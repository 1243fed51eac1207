package org.apache.spark.shuffle.adaptive.transport

import java.io.File

/**
 * What a transport does on the serving side as map outputs come and go. Netty needs nothing
 * (Spark's block server reads the files on request); one-sided reads need each data file
 * registered, and its description published, before its MapStatus reaches the driver.
 */
private[spark] trait MapOutputListener {

  /**
   * A map task committed its output: `dataFile` with `offsets` (the index: where each reduce
   * partition starts, then the file's length). Called on the task's thread before it returns
   * its MapStatus.
   */
  def committed(shuffleId: Int, mapId: Long, dataFile: File, offsets: Array[Long]): Unit

  /** The shuffle was unregistered: its files are about to be deleted. */
  def removed(shuffleId: Int): Unit

  def stop(): Unit
}

private[spark] object MapOutputListener {

  /** Serving through Spark's block server: nothing to do. */
  val BlockServer: MapOutputListener = new MapOutputListener {
    override def committed(
        shuffleId: Int,
        mapId: Long,
        dataFile: File,
        offsets: Array[Long]): Unit = ()
    override def removed(shuffleId: Int): Unit = ()
    override def stop(): Unit = ()
  }
}
