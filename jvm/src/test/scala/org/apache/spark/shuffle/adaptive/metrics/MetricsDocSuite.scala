package org.apache.spark.shuffle.adaptive.metrics

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.shuffle.adaptive.GeneratedDocs
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters._

/**
 * Keeps `docs/metrics.md`, what `pyspark_shuffle.metrics()` documents, in step with the
 * counter tables ([[FetchCounters.All]], [[FetchCounters.DerivedValues]],
 * [[CombineCounters.All]]), and Python's `counters.json` too: `make docs` writes them
 * ([[GeneratedDocs]]), this suite fails on any drift.
 */
class MetricsDocSuite extends AnyFunSuite {
  import MetricsDocSuite._

  private def checkGenerated(file: Path, expected: String): Unit =
    GeneratedDocs.drift(file, expected).foreach(problem => fail(problem))

  test("docs/metrics.md matches the counter tables") {
    checkGenerated(DocFile, render())
  }

  test("pyspark_shuffle/counters.json (the names Python reads counters by) matches the tables") {
    checkGenerated(NamesFile, renderNames())
  }

  test("every counter declared is in its table: none declared after it was read") {
    def declaredVals[T](owner: AnyRef, kind: Class[T]): Int =
      owner.getClass.getDeclaredFields.count(f => kind.isAssignableFrom(f.getType))
    assert(declaredVals(FetchCounters, classOf[Counter]) === FetchCounters.All.size)
    assert(
      declaredVals(CombineCounters, classOf[CombineCounters.Counter]) ===
        CombineCounters.All.size)
  }

  test("every name the table declares is a key Python receives, and only those") {
    val c = new FetchCounters
    val documented = FetchCounters.All.filterNot(_.internal).map(_.name) ++
      FetchCounters.DerivedValues.map(_.name) :+ "combine"
    assert(c.toMap.keySet === documented.toSet)
    assert(documented.distinct === documented)
    val combine = CombineCounters.All.map(_.name) ++ CombineCounters.Extra.map(_._1)
    assert(c.combine.toMap.keySet === combine.toSet)
  }

  test("merging follows each counter's kind") {
    val a = new FetchCounters
    val b = new FetchCounters
    a.add(ReduceTasks, 1)
    b.add(ReduceTasks, 2)
    a.observe(PeakBytesInFlight, 100)
    b.observe(PeakBytesInFlight, 80)
    a.limitObserved(50, 1000, 1)
    b.limitObserved(20, 500, 2)
    b.label(HostBySource, "e1", "h1")
    b.add(WaitMsBySource, "e1", 2.5)
    a.merge(b)
    assert(a(ReduceTasks) === 3 && a(PeakBytesInFlight) === 100)
    assert(a(LimitMin) === 20 && a(LimitMax) === 1000 && a(LimitChanges) === 3)
    assert(a(HostBySource) === Map("e1" -> "h1") && a(WaitMsBySource) === Map("e1" -> 2.5))
    assert(!a.isZero && new FetchCounters().isZero)
    val onlyLabel = new FetchCounters
    onlyLabel.label(HostBySource, "e1", "h1")
    assert(!onlyLabel.isZero, "every counter counts towards isZero")
  }
}

private[adaptive] object MetricsDocSuite {
  val DocFile: Path = Paths.get("docs", "metrics.md")
  val NamesFile: Path = Paths.get("pyspark_shuffle", "counters.json")

  private def kind(c: Counter): String = c match {
    case _: Total => "sum"
    case _: Peak => "maximum"
    case _: Floor => "least non-zero"
    case _: Time => "sum"
    case _: PerKey | _: TimePerKey => "sum per key"
    case _: Label => "latest per key"
  }

  private def row(cells: String*): String =
    cells
      .map(_.trim.replaceAll("\\s*\\n\\s*", " ").replace("|", "\\|"))
      .mkString("| ", " | ", " |\n")

  /** The names of the counters Python receives: a counters dict's, and local reduction's. */
  def renderNames(): String = {
    val fetch = FetchCounters.All.filterNot(_.internal).map(_.name) ++
      FetchCounters.DerivedValues.map(_.name) :+ "combine"
    val combine = CombineCounters.All.map(_.name) ++ CombineCounters.Extra.map(_._1)
    def list(names: Seq[String]) = names.map(n => s"    \"$n\"").mkString("[\n", ",\n", "\n  ]")
    "{\n" +
      s"""  "generated": "from metrics/FetchCounters.scala and metrics/CombineCounters.scala by make docs; ${GeneratedDocs.HowToRegenerate
          .replace("\"", "\\\"")}",\n""" +
      s"""  "fetch": ${list(fetch)},\n""" +
      s"""  "combine": ${list(combine)}\n""" +
      "}\n"
  }

  def render(): String = {
    val out = new StringBuilder
    out ++= "# Metrics\n\n"
    out ++= "What `pyspark_shuffle.metrics(spark)` returns under `application` and under each " +
      "executor id: the counters of the plugin's reduce tasks, added up as the table says. " +
      "This file is generated from `metrics/FetchCounters.scala` and " +
      "`metrics/CombineCounters.scala` by `make docs`; do not edit it by hand. " +
      GeneratedDocs.HowToRegenerate + ".\n\n"
    out ++= "## Fetch counters\n\n| Name | Merged as | Meaning |\n|---|---|---|\n"
    FetchCounters.All
      .filterNot(_.internal)
      .foreach(c => out ++= row(s"`${c.name}`", kind(c), c.doc))
    FetchCounters.DerivedValues.foreach(d => out ++= row(s"`${d.name}`", "derived", d.doc))
    out ++= row("`combine`", "see below", "what local reduction did: the counters below")
    out ++= "\n## Local reduction (`combine`)\n\n| Name | Meaning |\n|---|---|\n"
    CombineCounters.All.foreach(c => out ++= row(s"`${c.name}`", c.doc))
    CombineCounters.Extra.foreach { case (n, d) => out ++= row(s"`$n`", d) }
    out.result()
  }
}
