package org.apache.spark.shuffle.adaptive.flow

/**
 * One executor's fetch budget (the first paper's coordination of the reducers of a node): the
 * bytes its reduce tasks have in flight plus those received and not yet consumed stay within
 * `capacity`, however many tasks read at once. Spark's limit is per task
 * (`spark.reducer.maxSizeInFlight`), so an executor with 16 task slots may hold 16 times it in
 * Netty's direct memory.
 *
 * Each reader (a reduce task's fetcher, [[Reader]]) may hold one `reserve` (one in-flight
 * increment) whatever the others hold, so none starves and none waits for another task to
 * consume. The capacity keeps a reserve for each of the executor's `slots` task slots; beyond
 * their reserves, readers share what is left, first come first served, each within its own
 * elastic limit. The capacity is exceeded only while more readers than slots read at once (a
 * join's task reads two shuffles), by at most one reserve per extra reader. Thread-safe.
 */
private[spark] final class FetchBudget(val capacity: Long, val reserve: Long, slots: Int) {
  require(
    reserve > 0 && slots > 0 && capacity / slots >= reserve,
    s"a budget of $capacity bytes has no reserve of $reserve bytes for each of $slots slots")

  private[this] val shared = capacity - slots * reserve
  private[this] var held = 0L
  // What readers hold beyond their reserves: the shared part's use.
  private[this] var beyondReserves = 0L
  private[this] var highWater = 0L

  /** Bytes held now by every reader. */
  def used: Long = synchronized(held)

  /** The most bytes held at once so far. */
  def peak: Long = synchronized(highWater)

  /** A reader that holds nothing yet; it must [[Reader.leave]] once done. */
  def join(): Reader = new Reader

  private def beyond(bytes: Long): Long = math.max(0L, bytes - reserve)

  final class Reader private[FetchBudget] {
    private[this] var holds = 0L
    private[this] var left = false

    /** Whether `size` more bytes fit: within this reader's reserve or the shared part's room. */
    def fits(size: Long): Boolean = FetchBudget.this.synchronized {
      val extra = beyond(holds + size) - beyond(holds)
      extra == 0 || beyondReserves + extra <= shared
    }

    /** Takes `size` bytes (after [[fits]] said they fit). */
    def take(size: Long): Unit = change(size)

    /** Gives back `size` bytes taken. */
    def give(size: Long): Unit = change(-size)

    /** Gives back all this reader holds; it holds nothing from then on. */
    def leave(): Unit = FetchBudget.this.synchronized {
      if (!left) {
        change(-holds)
        left = true
      }
    }

    private def change(delta: Long): Unit = FetchBudget.this.synchronized {
      if (!left) {
        beyondReserves += beyond(holds + delta) - beyond(holds)
        holds += delta
        held += delta
        highWater = math.max(highWater, held)
      }
    }
  }
}
