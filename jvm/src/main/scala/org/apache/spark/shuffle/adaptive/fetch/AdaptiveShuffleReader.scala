package org.apache.spark.shuffle.adaptive.fetch

import java.io.InputStream

import org.apache.spark.{Aggregator, InterruptibleIterator, TaskContext}
import org.apache.spark.serializer.SerializerInstance
import org.apache.spark.shuffle.{BaseShuffleHandle, ShuffleReader, ShuffleReadMetricsReporter}
import org.apache.spark.storage.BlockId
import org.apache.spark.util.CompletionIterator
import org.apache.spark.util.collection.ExternalSorter

/**
 * Reads the records of a range of reduce partitions through a [[ShuffleBlockFetcher]] and applies
 * what the shuffle dependency asks for on the reduce side: combining by key, then sorting by key.
 */
private[spark] final class AdaptiveShuffleReader[K, C](
    handle: BaseShuffleHandle[K, _, C],
    context: TaskContext,
    readMetrics: ShuffleReadMetricsReporter,
    newFetcher: () => Iterator[(BlockId, InputStream)])
    extends ShuffleReader[K, C] {

  private val dep = handle.dependency

  override def read(): Iterator[Product2[K, C]] = {
    val serializer: SerializerInstance = dep.serializer.newInstance()
    val records = newFetcher()
      .flatMap { case (_, stream) =>
        // The deserialization iterator closes the stream (releasing the block) at its end.
        serializer.deserializeStream(stream).asKeyValueIterator
      }
      .map { record =>
        readMetrics.incRecordsRead(1)
        record
      }
    val counted = CompletionIterator[(Any, Any), Iterator[(Any, Any)]](
      records,
      context.taskMetrics().mergeShuffleReadMetrics())
    val interruptible = new InterruptibleIterator[(Any, Any)](context, counted)

    val combined: Iterator[Product2[K, Any]] = dep.aggregator match {
      case Some(agg) if dep.keyOrdering.isEmpty =>
        if (dep.mapSideCombine) {
          agg.combineCombinersByKey(interruptible.asInstanceOf[Iterator[(K, C)]], context)
        } else {
          agg.combineValuesByKey(interruptible.asInstanceOf[Iterator[(K, Nothing)]], context)
        }
      case _ => interruptible.asInstanceOf[Iterator[Product2[K, Any]]]
    }

    val result = dep.keyOrdering match {
      case Some(ordering) =>
        // The sorter combines while it sorts, so a sorted shuffle was not combined above.
        val aggregator = dep.aggregator.map { agg =>
          if (dep.mapSideCombine) {
            new Aggregator[K, Any, C](
              identity[Any](_).asInstanceOf[C],
              (c, v) => agg.mergeCombiners(c, v.asInstanceOf[C]),
              agg.mergeCombiners)
          } else {
            agg.asInstanceOf[Aggregator[K, Any, C]]
          }
        }
        val sorter = new ExternalSorter[K, Any, C](
          context,
          aggregator,
          ordering = Some(ordering),
          serializer = dep.serializer)
        sorter.insertAllAndUpdateMetrics(combined)
      case None => combined.asInstanceOf[Iterator[Product2[K, C]]]
    }

    result match {
      case _: InterruptibleIterator[_] => result
      // Combining or sorting consumed the interruptible input; check for kills on the output too.
      case _ => new InterruptibleIterator[Product2[K, C]](context, result)
    }
  }
}
