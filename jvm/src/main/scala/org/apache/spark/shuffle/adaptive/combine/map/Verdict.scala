package org.apache.spark.shuffle.adaptive.combine.map

/**
 * What one executor's map tasks of a shuffle do ([[Verdict.Role]]): fold while folds pay, write
 * their files whole while they do not, and first judge whether they would.
 *
 * A fold pays by its merges: a record folded that meets a key held already is neither written
 * nor read and merged in the reduce stage, while one that meets none is written later all the
 * same (in its segment), and every record folded costs its probe. So folding pays where the share
 * of records meeting a key held is at least `breakEven` (the spec's: what a probe and merge cost
 * against a record's write and read, measured per kind of record).
 *
 * Judging costs next to nothing and changes nothing a map task writes until it decides: a
 * judging map task writes its file, keeping the hashes of a sample of its keys ([[KeySample]]),
 * and counts how many of them the map outputs judged before it on the executor had: as it
 * writes them ([[Verdict.EarlyKeys]] of them that show folding pays decide, and the task folds
 * its remaining records), or when it commits. The first such count decides: folding starts, or
 * the executor writes whole files. So a shuffle whose keys do not repeat across map tasks is never
 * folded (its files, its metrics and its reads are the sort shuffle's), and where they repeat
 * the first map output on each executor (and any that started beside it) is read from its file.
 *
 * While folding, the folds themselves are judged, over windows of [[Verdict.MapsPerWindow]] map
 * outputs (or one of [[Verdict.RowsPerWindow]] records or more) whose folds met records holding
 * another map output's (a fold into fresh records cannot meet a key): a window below
 * `breakEven` turns folding off, and so do [[Verdict.FoldsWithoutMeeting]] folds that all went
 * into fresh records (the combine memory holds less than two map outputs' records). While off,
 * after every `interval` map tasks the executor judges again; `interval` doubles after each
 * judgement that did not pay, up to [[Verdict.MaxJudgeInterval]].
 *
 * Thread-safe: map tasks of the executor start and commit concurrently.
 */
private[combine] final class Verdict(breakEven: Double) {
  import Verdict._

  private[this] var state: Role = Judge
  private[this] var windowMaps, windowRows, windowMerged = 0L
  private[this] var foldsSinceOn = 0
  private[this] var judgedSinceOn = 0
  private[this] var mapsSinceOff = 0
  private[this] var interval = FirstJudgeInterval
  // Bumped whenever judging starts again: samples of an earlier round no longer count.
  private[this] var round = 0

  /** What the map task starting now does, and the judging round it belongs to. */
  def nextMap(): (Role, Int) = synchronized {
    if (state == Write) {
      mapsSinceOff += 1
      if (mapsSinceOff >= interval) {
        state = Judge
        round += 1
      }
    }
    (state, round)
  }

  /**
   * A judging map task of `ofRound` committed: `probed` of its sampled keys were looked for
   * among those of the map outputs judged before it, `met` found. Answers what happens now, if
   * that changes: `Some(true)` folding starts, `Some(false)` it does not.
   */
  def judged(ofRound: Int, probed: Long, met: Long): Option[Boolean] = synchronized {
    if (state != Judge || ofRound != round || probed == 0) None
    else if (met >= breakEven * probed) {
      state = Fold
      foldsSinceOn = 0
      judgedSinceOn = 0
      windowMaps = 0
      windowRows = 0
      windowMerged = 0
      interval = FirstJudgeInterval
      Some(true)
    } else {
      interval = if (round == 0) interval else math.min(MaxJudgeInterval, interval * 2)
      off()
      Some(false)
    }
  }

  /**
   * A folding map task folded `rows` records, of which `merged` met a key held; `couldMeet`: some
   * went into records that held another map output's rows. Answers why folding goes off now, if
   * it does (the caller then seals what was folded).
   */
  def folded(rows: Long, merged: Long, couldMeet: Boolean): Option[String] = synchronized {
    if (state != Fold) return None
    foldsSinceOn += 1
    if (couldMeet) {
      judgedSinceOn += 1
      windowMaps += 1
      windowRows += rows
      windowMerged += merged
    }
    if (windowMaps >= MapsPerWindow || (windowMaps > 0 && windowRows >= RowsPerWindow)) {
      val share = windowMerged.toDouble / math.max(1L, windowRows)
      val why = s"$windowMerged of the $windowRows records folded into records holding " +
        s"another map output's met a key held, over $windowMaps map outputs: a share of " +
        f"$share%.3f against the $breakEven%.3f folding must reach to pay"
      windowMaps = 0
      windowRows = 0
      windowMerged = 0
      if (share >= breakEven) None
      else {
        off()
        Some(why)
      }
    } else if (judgedSinceOn == 0 && foldsSinceOn >= FoldsWithoutMeeting) {
      off()
      Some(
        s"no fold of its first $foldsSinceOn map outputs found another map output's records " +
          "in memory to merge with (combine.maxMemory holds less than two map outputs' records)")
    } else None
  }

  private def off(): Unit = {
    state = Write
    mapsSinceOff = 0
  }
}

private[combine] object Verdict {

  /** What a map task does with its records. */
  sealed trait Role
  case object Fold extends Role
  case object Judge extends Role
  case object Write extends Role

  /**
   * Sampled keys a judging map task looks up in the earlier ones' sample as it writes them
   * before their share may decide that folding pays (the rest of its records then folded).
   */
  val EarlyKeys = 4096

  /** Map outputs whose folds could meet a key, per judgement of the folds. */
  val MapsPerWindow = 2

  /** A map output this large is judged on its own. */
  val RowsPerWindow = 50000L

  /** Folds, none into records holding another map output's, before folding goes off. */
  val FoldsWithoutMeeting = 8

  val FirstJudgeInterval = 16
  val MaxJudgeInterval = 1024
}
