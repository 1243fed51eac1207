package org.apache.spark.shuffle.adaptive.push.map

/**
 * The receiver's side of the DSA w/ SMS paper's meta-shuffle (Algorithm 1): a bound that holds
 * `used` of its `capacity` bytes takes the offered sizes in order while each fits, stops at the
 * first that does not, and answers how many it took.
 */
private[map] object Admission {

  def accepted(used: Long, capacity: Long, sizes: Seq[Long]): Int = {
    var total = used
    sizes.iterator.takeWhile { size =>
      val fits = total + size <= capacity
      if (fits) total += size
      fits
    }.size
  }
}
