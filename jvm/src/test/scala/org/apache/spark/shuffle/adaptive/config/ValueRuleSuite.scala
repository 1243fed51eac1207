package org.apache.spark.shuffle.adaptive.config

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import scala.util.Try

import org.json4s._
import org.json4s.jackson.JsonMethods
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkConf
import org.apache.spark.shuffle.adaptive.flow.FlowSettings

/**
 * Each key's rule, judged on the values Python's configure() options are tested on
 * (`tests/shared/conf_cases.json`; the test JVM runs in the repository root), so a value is
 * accepted or refused alike on both sides.
 */
class ValueRuleSuite extends AnyFunSuite {

  private val shared =
    JsonMethods.parse(
      new String(Files.readAllBytes(Paths.get("tests/shared/conf_cases.json")), UTF_8))
  private val cases = (shared \ "cases").asInstanceOf[JArray].arr

  test("the shared cases are judged as Python judges them; every key has cases") {
    val byKey = AdaptiveShuffleConf.entries.map(e => e.key -> e).toMap
    cases.foreach { c =>
      val key = AdaptiveShuffleConf.Prefix + (c \ "key").asInstanceOf[JString].s
      val value = (c \ "value").asInstanceOf[JString].s
      val conf = new SparkConf(false).set(key, value)
      val read = Try(conf.get(byKey(key)))
      assert(read.isSuccess === ((c \ "accepted") == JBool.True), s"$key=$value: $read")
      read.failed.foreach { e =>
        assert(e.isInstanceOf[IllegalArgumentException], s"$key=$value: $e")
        assert(e.getMessage.contains(key), s"$key=$value: ${e.getMessage}")
      }
    }
    val covered = cases.map(c => AdaptiveShuffleConf.Prefix + (c \ "key").asInstanceOf[JString].s)
    assert(covered.toSet === byKey.keySet)
  }

  test("the shared combinations are judged as Python's configure() judges them") {
    (shared \ "combinations").asInstanceOf[JArray].arr.foreach { c =>
      val conf = new SparkConf(false)
      (c \ "conf").asInstanceOf[JObject].obj.foreach { case (key, value) =>
        conf.set(key, value.asInstanceOf[JString].s)
      }
      val judged = Try { Features(conf); FlowSettings(conf) }
      assert(
        judged.isSuccess === ((c \ "accepted") == JBool.True),
        s"${conf.getAll.toSeq}: $judged")
      judged.failed.foreach(e => assert(e.isInstanceOf[IllegalArgumentException], e))
    }
  }

  test("a refused value's error names the key and what is allowed") {
    val key = AdaptiveShuffleConf.FETCH_WAIT_WINDOW.key
    val error = intercept[IllegalArgumentException](
      new SparkConf(false).set(key, "0").get(AdaptiveShuffleConf.FETCH_WAIT_WINDOW))
    assert(error.getMessage.contains(key))
    assert(error.getMessage.contains("a whole number between 1 and 100000"))
  }
}
