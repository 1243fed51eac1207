package org.apache.spark.shuffle.adaptive

import java.io.RandomAccessFile
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}
import java.util.regex.Pattern

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.json4s._
import org.json4s.jackson.JsonMethods
import org.scalactic.source.Position
import org.scalatest.Tag
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{LocalSparkContext, SparkContext}

/**
 * What a Spark log must not hold after a test: an uncaught exception, an ERROR whose stack names
 * the plugin's package, an executor lost. The rules are Python's (`pyspark_shuffle/
 * spark_log_rules.json`; the test JVM runs in the repository root), and so are the cases this
 * scanner is tested on (`tests/shared/spark_log_cases.json`).
 */
object SparkLogs {

  final case class Finding(kind: String, source: String, text: String, executor: Option[String]) {
    override def toString: String =
      s"$kind in $source: ${text.linesIterator.nextOption().getOrElse("")}"
  }

  /**
   * What a test causes on purpose: executors lost (per application, as each log reports them),
   * errors whose entries match a pattern.
   */
  final case class Expected(lostExecutors: Int = 0, errors: Seq[String] = Nil) {

    /** And one executor more killed, with what its peers may log of it while they learn. */
    def withKilled: Expected =
      Expected(lostExecutors + 1, (errors ++ afterExecutorKilled).distinct)

    def unexpected(findings: Seq[Finding]): Seq[Finding] = {
      val patterns = errors.map(Pattern.compile)
      // Per log, as each application reports its own executors.
      val lost = findings.filter(_.kind == ExecutorLost).groupMap(_.source)(_.executor)
      findings.filterNot { f =>
        (f.kind == ExecutorLost && lost(f.source).distinct.size <= lostExecutors) ||
        patterns.exists(_.matcher(f.text).find())
      }
    }
  }

  val Uncaught = "uncaught exception"
  val PluginError = "plugin error"
  val ExecutorLost = "executor lost"

  private val rules = JsonMethods.parse(
    new String(Files.readAllBytes(Paths.get("pyspark_shuffle/spark_log_rules.json")), UTF_8))
  private def patterns(name: String): Seq[Pattern] =
    (rules \ name).asInstanceOf[JArray].arr.map(v => Pattern.compile(v.asInstanceOf[JString].s))
  private val entry = Pattern.compile((rules \ "entry").asInstanceOf[JString].s)
  private val uncaught = patterns("uncaught")
  private val pluginFrame = (rules \ "plugin_frame").asInstanceOf[JString].s
  private val errorLevels =
    (rules \ "error_levels").asInstanceOf[JArray].arr.map(_.asInstanceOf[JString].s).toSet
  private val executorLost = patterns("executor_lost")
  private val stackLines = (rules \ "stack_lines").asInstanceOf[JInt].num.toInt
  private lazy val afterExecutorKilled =
    (rules \ "after_executor_killed").asInstanceOf[JArray].arr.map(_.asInstanceOf[JString].s)

  def scan(text: String, source: String): Seq[Finding] = {
    val entries = mutable.ArrayBuffer.empty[(Option[String], mutable.ArrayBuffer[String])]
    text.linesIterator.foreach { line =>
      val header = entry.matcher(line)
      val isHeader = header.find()
      if (isHeader || uncaught.exists(_.matcher(line).find())) {
        val level = if (isHeader) Some(header.group(1)) else None
        entries += ((level, mutable.ArrayBuffer(line)))
      } else entries.lastOption.foreach(_._2 += line)
    }
    entries.toSeq.flatMap { case (level, lines) =>
      val head = lines.head
      val text = lines.take(stackLines + 1).mkString("\n")
      val lost = executorLost.map(_.matcher(head)).find(_.find())
      if (uncaught.exists(_.matcher(head).find())) Some(Finding(Uncaught, source, text, None))
      else if (lost.isDefined) {
        val m = lost.get
        Some(Finding(ExecutorLost, source, text, if (m.groupCount > 0) Some(m.group(1)) else None))
      } else if (level.exists(errorLevels) && lines.exists(_.contains(pluginFrame)))
        Some(Finding(PluginError, source, text, None))
      else None
    }
  }

  /**
   * The logs of `appId`'s executors on local-cluster under `spark.testing`: each worker works in
   * a temporary directory, each executor in `<it>/<appId>/<executor id>`, where it logs its
   * errors to `stderr` and (with the tests' log4j2 configuration) the rest to
   * `jvm/target/unit-tests.log`.
   */
  def executorLogs(appId: String): Seq[(Path, String)] = {
    val tmp = Paths.get(sys.props("java.io.tmpdir"))
    val workers = Files.list(tmp)
    try
      workers.iterator.asScala.toSeq
        .filter(_.getFileName.toString.startsWith("worker"))
        .map(_.resolve(appId))
        .filter(Files.isDirectory(_))
        .flatMap { app =>
          val executors = Files.list(app)
          try executors.iterator.asScala.toSeq
          finally executors.close()
        }
        .flatMap { dir =>
          Seq(dir.resolve("stderr"), dir.resolve("jvm/target/unit-tests.log"))
            .filter(Files.isRegularFile(_))
            .map(_ -> s"executor ${dir.getFileName}")
        }
    finally workers.close()
  }

  /** The driver's log: this JVM's, shared by every suite it runs. */
  val driverLog: Path = Paths.get("jvm/target/unit-tests.log")

  /** How far each log was read: each line is read once, by the first `readNew` after it. */
  final class Watch {
    private[this] val readTo = mutable.HashMap.empty[Path, Long]

    /** Marks everything `files` hold so far as read. */
    def skip(files: Seq[Path]): Unit = files.filter(Files.isRegularFile(_)).foreach { f =>
      readTo(f) = Files.size(f)
    }

    def readNew(files: Seq[(Path, String)]): Seq[Finding] = files.flatMap { case (file, source) =>
      val from = readTo.getOrElse(file, 0L)
      val raf = new RandomAccessFile(file.toFile, "r")
      val bytes =
        try {
          raf.seek(from)
          val b = new Array[Byte]((raf.length() - from).toInt.max(0))
          raf.readFully(b)
          b
        } finally raf.close()
      val complete = bytes.lastIndexOf('\n'.toByte) + 1
      readTo(file) = from + complete
      scan(new String(bytes, 0, complete, UTF_8), s"$source ($file)")
    }
  }
}

/**
 * At the end of each test, what the logs of its application (`underTest`) and the driver's
 * gained meanwhile: an uncaught exception, an ERROR naming the plugin's package or an executor
 * lost fails the test, unless the test said it causes them (`expectInLogs`). A test that failed
 * already is not checked.
 */
trait ReadsSparkLogs extends AnyFunSuite {

  private[this] val watch = new SparkLogs.Watch
  private[this] var expectedNow = SparkLogs.Expected()

  /** The application whose executors' logs are read. */
  protected def underTest: Option[SparkContext]

  /** Before its logs are read at a test's end (stopping it, so its stop is read too). */
  protected def beforeReading(): Unit = ()

  /** This test causes, on purpose, what `e` says. */
  protected def expectInLogs(e: SparkLogs.Expected): Unit = expectedNow = e

  /** What this test said it causes so far. */
  protected def expectedInLogs: SparkLogs.Expected = expectedNow

  /** What the test named `testName` causes on purpose, unless it says otherwise. */
  protected def expectedInLogs(testName: String): SparkLogs.Expected = SparkLogs.Expected()

  /** Fails with what the logs gained since the last read that `expected` does not allow. */
  protected def checkLogs(): Unit = {
    val app = underTest.map(_.applicationId)
    beforeReading()
    val unexpected = expectedNow.unexpected(
      watch.readNew((SparkLogs.driverLog -> "driver") +: app.toSeq.flatMap(SparkLogs.executorLogs)))
    if (unexpected.nonEmpty)
      fail(
        s"Spark's logs: ${unexpected.size} finding(s)\n" +
          unexpected.take(5).map(f => s"$f\n${f.text}").mkString("\n\n"))
  }

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit
      pos: Position): Unit =
    super.test(testName, testTags: _*) {
      expectedNow = expectedInLogs(testName)
      watch.skip(Seq(SparkLogs.driverLog))
      testFun
      checkLogs()
    }
}

/** [[ReadsSparkLogs]] of a suite's `sc`, stopped at each test's end. */
trait SparkLogsCheck extends ReadsSparkLogs { self: LocalSparkContext =>

  override protected def underTest: Option[SparkContext] = Option(sc)

  override protected def beforeReading(): Unit = resetSparkContext()

  /** Kills `executorId` (the master starts another): one executor lost, on purpose. */
  protected def killAndReplaceExecutor(executorId: String): Unit = {
    expectInLogs(expectedInLogs.withKilled)
    sc.killAndReplaceExecutor(executorId)
  }
}

/** Spark's ShuffleSuite run against the plugin: its tests that corrupt blocks on purpose. */
trait ShuffleSuiteLogsCheck extends SparkLogsCheck { self: LocalSparkContext =>
  override protected def expectedInLogs(testName: String): SparkLogs.Expected =
    if (testName.startsWith("SPARK-36206"))
      SparkLogs.Expected(errors = Seq("is corrupted due to", "Stream is corrupted"))
    else super.expectedInLogs(testName)
}
