package org.apache.spark.shuffle.adaptive.combine

/**
 * How the records of one shuffle combine: two records of one key into one, as the reduce side
 * would combine them (local reduction, see [[CombinedShuffle]]). Decided on the driver when the
 * shuffle is registered (from its dependency) and carried to executors by its handle.
 */
private[spark] trait CombineSpec extends Serializable {

  /** What combines, for logs: "sql", "rdd" or "rdd, numbers". */
  def kind: String

  /**
   * The share of folded rows that must meet a key their executor holds already for folding to
   * cost less than it saves: a row folded that meets no key is written later all the same (in
   * its segment), so only a merge saves work, its write now and its read and merge in the reduce
   * stage, and each row folded costs its probe. Below it, [[Verdict]] turns combining off.
   */
  def breakEven: Double

  /** The hash of a record's key, whose sample judges whether folding pays ([[KeySample]]). */
  def keyHash(key: Any): Int

  /** How a map task keeps its records, and how its executor holds them combined. */
  type Task <: TaskRecords
  type Combined >: Null <: CombinedRecords

  /**
   * What one thread combines with: it holds the (generated) code and scratch rows, so each
   * thread makes its own, once per shuffle.
   */
  def newEngine(): CombineEngine[Task, Combined]
}
