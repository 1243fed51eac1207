package org.apache.spark.shuffle.adaptive.dummy

/**
 * Destinations `0 until n` drawn with weight w(x) = 1 / (x + 1)^alpha, the Zipf law of the
 * DummyRDD in the DSA w/ SMS paper (section 4.1); alpha = 0 is uniform.
 */
private[dummy] final class ZipfDestinations(val n: Int, val alpha: Double) extends Serializable {
  require(n > 0, s"the number of destinations must be positive, got $n")
  require(alpha >= 0 && !alpha.isInfinite, s"skew (alpha) must be a finite number >= 0, got $alpha")

  /** Normalised weights: probabilities summing to 1. */
  val probabilities: Array[Double] = {
    val w = Array.tabulate(n)(x => math.pow(x + 1.0, -alpha))
    val total = w.sum
    w.map(_ / total)
  }

  private[this] val cumulative: Array[Double] = probabilities.scanLeft(0.0)(_ + _).tail

  /** The destination for a uniform draw `u` in [0, 1): the first x whose cumulative weight > u. */
  def destination(u: Double): Int = {
    var lo = 0
    var hi = n - 1
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (cumulative(mid) > u) hi = mid else lo = mid + 1
    }
    lo
  }
}
