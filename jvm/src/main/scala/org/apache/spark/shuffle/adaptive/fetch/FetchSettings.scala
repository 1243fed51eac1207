package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.SparkConf
import org.apache.spark.internal.config
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf

/** The limits and switches one reduce task's fetcher obeys, read once from the Spark conf. */
private[spark] final case class FetchSettings(
    maxBytesInFlight: Long,
    maxReqsInFlight: Int,
    maxBlocksInFlightPerAddress: Int,
    requestSize: Long,
    maxReqSizeShuffleToMem: Long,
    detectCorrupt: Boolean,
    detectCorruptUseExtraMemory: Boolean,
    checksumEnabled: Boolean,
    checksumAlgorithm: String) {
  require(maxBytesInFlight > 0, "spark.reducer.maxSizeInFlight must be positive")
  require(requestSize > 0 && requestSize <= maxBytesInFlight,
    s"${AdaptiveShuffleConf.FETCH_IN_FLIGHT_INCREMENT.key} ($requestSize bytes) must be positive " +
      s"and at most spark.reducer.maxSizeInFlight ($maxBytesInFlight bytes)")
}

private[spark] object FetchSettings {
  def apply(conf: SparkConf): FetchSettings = {
    // Spark reads maxSizeInFlight in MiB when the value has no unit.
    val maxBytesInFlight = conf.get(config.REDUCER_MAX_SIZE_IN_FLIGHT) * 1024 * 1024
    FetchSettings(
      maxBytesInFlight = maxBytesInFlight,
      maxReqsInFlight = conf.get(config.REDUCER_MAX_REQS_IN_FLIGHT),
      maxBlocksInFlightPerAddress = conf.get(config.REDUCER_MAX_BLOCKS_IN_FLIGHT_PER_ADDRESS),
      requestSize = conf.get(AdaptiveShuffleConf.FETCH_IN_FLIGHT_INCREMENT)
        .getOrElse(math.max(maxBytesInFlight / 5, 1L)),
      maxReqSizeShuffleToMem = conf.get(config.MAX_REMOTE_BLOCK_SIZE_FETCH_TO_MEM),
      detectCorrupt = conf.get(config.SHUFFLE_DETECT_CORRUPT),
      detectCorruptUseExtraMemory = conf.get(config.SHUFFLE_DETECT_CORRUPT_MEMORY),
      checksumEnabled = conf.get(config.SHUFFLE_CHECKSUM_ENABLED),
      checksumAlgorithm = conf.get(config.SHUFFLE_CHECKSUM_ALGORITHM))
  }
}
