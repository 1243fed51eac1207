package org.apache.spark.shuffle.adaptive.push.driver

import org.apache.spark.scheduler.StageInfo

/** Stages as the driver's listeners hear of them, for the suites of push/driver. */
object StageInfos {

  /** Stage `id` of 4 tasks, with `parents`; a map stage of `shuffle` if one; `failed` or not. */
  def of(
      id: Int,
      parents: Seq[Int] = Nil,
      shuffle: Option[Int] = None,
      failed: Boolean = false): StageInfo = {
    val info = new StageInfo(
      stageId = id,
      attemptId = 0,
      name = "stage",
      numTasks = 4,
      rddInfos = Nil,
      parentIds = parents,
      details = "",
      shuffleDepId = shuffle,
      resourceProfileId = 0)
    if (failed) info.failureReason = Some("a fetch failed")
    info
  }
}
