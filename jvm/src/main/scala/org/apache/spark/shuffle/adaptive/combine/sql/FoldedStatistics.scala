package org.apache.spark.shuffle.adaptive.combine.sql

import scala.concurrent.{CanAwait, ExecutionContext, Future}
import scala.concurrent.duration.Duration
import scala.util.Try

import org.apache.spark.{FutureAction, MapOutputStatistics}

/**
 * A combining exchange's map stage, whose statistics count what its map tasks folded as well as
 * what they wrote (`add`): Spark's statistics are the map outputs' sizes, which hold only what
 * was not folded, and AQE plans the next stage by them (with most rows folded it would coalesce
 * every partition into one task). Cancelling it cancels the map stage, as Spark's exchange does.
 */
private[spark] final class FoldedStatistics(
    action: FutureAction[MapOutputStatistics],
    add: MapOutputStatistics => MapOutputStatistics)
    extends FutureAction[MapOutputStatistics] {

  override def cancel(reason: Option[String]): Unit = action.cancel(reason)

  override def ready(atMost: Duration)(implicit permit: CanAwait): FoldedStatistics.this.type = {
    action.ready(atMost)
    this
  }

  override def result(atMost: Duration)(implicit permit: CanAwait): MapOutputStatistics =
    add(action.result(atMost))

  override def onComplete[U](f: Try[MapOutputStatistics] => U)(implicit
      executor: ExecutionContext): Unit = action.onComplete(t => f(t.map(add)))

  override def isCompleted: Boolean = action.isCompleted

  override def isCancelled: Boolean = action.isCancelled

  override def value: Option[Try[MapOutputStatistics]] = action.value.map(_.map(add))

  override def jobIds: Seq[Int] = action.jobIds

  override def transform[S](f: Try[MapOutputStatistics] => Try[S])(implicit
      executor: ExecutionContext): Future[S] = action.transform(t => f(t.map(add)))

  override def transformWith[S](f: Try[MapOutputStatistics] => Future[S])(implicit
      executor: ExecutionContext): Future[S] = action.transformWith(t => f(t.map(add)))
}

private[spark] object FoldedStatistics {

  /** `stats` with `folded` bytes spread over its partitions, which folds spread by key hash. */
  def spread(stats: MapOutputStatistics, folded: Long): MapOutputStatistics =
    if (stats == null || folded <= 0) stats
    else {
      val sizes = stats.bytesByPartitionId.clone()
      val n = sizes.length
      var p = 0
      while (p < n) {
        sizes(p) += folded / n + (if (p < folded % n) 1 else 0)
        p += 1
      }
      new MapOutputStatistics(stats.shuffleId, sizes)
    }
}
