package org.apache.spark.shuffle.adaptive.config

import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry, OptionalConfigEntry}
import org.apache.spark.network.util.ByteUnit

/**
 * Every configuration key of the plugin, declared once. `conf/configuration.md` is generated
 * from [[entries]] (see ConfigurationDocSuite) and the Python package validates against it.
 */
private[spark] object AdaptiveShuffleConf {

  val Prefix = "spark.shuffle.adaptive."

  val FETCH_IN_FLIGHT_INCREMENT: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "fetch.inFlightIncrement")
      .doc("Size one remote fetch request aggregates blocks up to (a block is never split, so " +
        "a larger block travels alone). Unset means spark.reducer.maxSizeInFlight / 5, the " +
        "request size of Spark's own reader. Must not exceed spark.reducer.maxSizeInFlight.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .checkValue(v => v > 0 && v <= Int.MaxValue, "must be a positive size of at most 2g")
      .createOptional

  /** In the order the documentation lists them. */
  val entries: Seq[ConfigEntry[_]] = Seq(FETCH_IN_FLIGHT_INCREMENT)
}
