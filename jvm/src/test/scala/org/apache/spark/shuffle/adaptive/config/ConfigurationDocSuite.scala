package org.apache.spark.shuffle.adaptive.config

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.shuffle.adaptive.GeneratedDocs
import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry}

/**
 * Keeps `conf/configuration.md` and Python's `conf_keys.json` in step with
 * [[AdaptiveShuffleConf.entries]]: `make docs` writes them ([[GeneratedDocs]]), this suite fails
 * on any drift. The test JVM runs in the repository root.
 */
class ConfigurationDocSuite extends AnyFunSuite {
  import ConfigurationDocSuite._

  test("conf/configuration.md matches AdaptiveShuffleConf") {
    checkGenerated(DocFile, render(AdaptiveShuffleConf.entries))
  }

  test("pyspark_shuffle/conf_keys.json (Python's rules) matches AdaptiveShuffleConf") {
    checkGenerated(KeysFile, renderKeys(AdaptiveShuffleConf.entries))
  }

  test("every entry declares its rule") {
    AdaptiveShuffleConf.entries.foreach(e => assert(AdaptiveShuffleConf.ruleOf(e) != null, e.key))
  }

  private def checkGenerated(file: Path, expected: String): Unit =
    GeneratedDocs.drift(file, expected).foreach(problem => fail(problem))

  test("every entry is one table row, in declaration order") {
    val rows = render(AdaptiveShuffleConf.entries).linesIterator
      .dropWhile(_ != TableHeader)
      .drop(2)
      .toSeq
    assert(rows.size === AdaptiveShuffleConf.entries.size)
    assert(
      rows.map(_.split(" \\| ")(0).stripPrefix("| `").stripSuffix("`")) ===
        AdaptiveShuffleConf.entries.map(_.key))
    assert(
      AdaptiveShuffleConf.entries.map(_.key).distinct.size ===
        AdaptiveShuffleConf.entries.size,
      "duplicate keys")
  }

  test("rendering of defaults and of characters that would break the table") {
    val withDefault = ConfigBuilder("spark.test.docs.withDefault")
      .doc("first line\nsecond | part")
      .version("9.9.9")
      .intConf
      .createWithDefault(42)
    val optional = ConfigBuilder("spark.test.docs.optional")
      .doc("no default")
      .version("1.2.3")
      .stringConf
      .createOptional
    val rows = render(Seq(withDefault, optional)).linesIterator
      .dropWhile(_ != TableHeader)
      .drop(2)
      .toSeq
    assert(
      rows === Seq(
        "| `spark.test.docs.withDefault` | 42 | 9.9.9 | first line second \\| part |",
        "| `spark.test.docs.optional` | (none) | 1.2.3 | no default |"))
  }
}

private[adaptive] object ConfigurationDocSuite {
  val DocFile: Path = Paths.get("conf", "configuration.md")
  val KeysFile: Path = Paths.get("pyspark_shuffle", "conf_keys.json")

  val TableHeader = "| Key | Default | Since | Meaning |"

  /** Makes a value fit on one table row. */
  private def cell(text: String): String =
    text.trim.replaceAll("\\s*\\n\\s*", " ").replace("|", "\\|")

  def render(entries: Seq[ConfigEntry[_]]): String = {
    val out = new StringBuilder
    out ++= "# Configuration\n\n"
    out ++= "This file is generated from `config/AdaptiveShuffleConf.scala` " +
      "(under `jvm/src/main/scala/org/apache/spark/shuffle/adaptive/`) by `make docs`; " +
      "do not edit it by hand. " + GeneratedDocs.HowToRegenerate + ".\n\n"
    out ++= TableHeader + "\n"
    out ++= "|---|---|---|---|\n"
    entries.foreach { entry =>
      val default = entry.defaultValueString match {
        case ConfigEntry.UNDEFINED => "(none)"
        case other => cell(other)
      }
      out ++= s"| `${entry.key}` | $default | ${cell(entry.version)} | ${cell(entry.doc)} |\n"
    }
    out.result()
  }

  /** Each key with its default, rule and the rule in words, for Python's validation. */
  def renderKeys(entries: Seq[ConfigEntry[_]]): String = {
    def ordered(pairs: (String, Any)*): java.util.Map[String, Any] = {
      val map = new java.util.LinkedHashMap[String, Any]
      pairs.foreach { case (k, v) =>
        map.put(
          k,
          v match {
            case values: Seq[_] => values.asJava
            case other => other
          })
      }
      map
    }
    val keys = entries.map { entry =>
      val rule = AdaptiveShuffleConf.ruleOf(entry)
      val default = entry.defaultValueString match {
        case ConfigEntry.UNDEFINED => null
        case other => other
      }
      ordered(
        "key" -> entry.key,
        "keyword" -> AdaptiveShuffleConf.keywordOf(entry),
        "default" -> default,
        "rule" -> ordered(("kind" -> rule.kind) +: rule.bounds.toSeq.sortBy(_._1): _*),
        "allowed" -> rule.allowed)
    }
    val combinations = KeyCombinations.All.map(c => ordered(c.toMap.toSeq.sortBy(_._1): _*))
    val root = ordered(
      "generated" -> ("from config/AdaptiveShuffleConf.scala and config/KeyCombinations.scala " +
        "by make docs; " + GeneratedDocs.HowToRegenerate),
      "keys" -> keys,
      "combinations" -> combinations)
    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(root) + "\n"
  }
}
