package org.apache.spark.shuffle.adaptive.dummy

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import org.json4s._
import org.json4s.jackson.JsonMethods
import org.scalatest.funsuite.AnyFunSuite

/**
 * The DummyRDD shape rule, judged on the cases Python's DummySpec is tested on
 * (`tests/shared/dummy_spec_cases.json`; the test JVM runs in the repository root), so the two
 * implementations accept and refuse the same shapes.
 */
class DummySpecSuite extends AnyFunSuite {

  private val cases = {
    val text =
      new String(Files.readAllBytes(Paths.get("tests/shared/dummy_spec_cases.json")), UTF_8)
    (JsonMethods.parse(text) \ "cases").asInstanceOf[JArray].arr
  }

  test("the shared cases are judged as Python judges them") {
    assert(cases.size >= 10)
    cases.foreach { c =>
      def long(field: String): Long = (c \ field).asInstanceOf[JInt].num.toLong
      val (size, partition) = (long("size"), long("partition_size"))
      val skew = (c \ "skew").asInstanceOf[JString].s.toDouble
      val label = s"size $size, partition size $partition, skew $skew"
      def spec = DummySpec(size, partition, skew, seed = 0, compressible = false)
      if ((c \ "valid") == JBool.True) {
        assert(spec.numPartitions === long("num_partitions"), label)
        val last =
          (c \ "last_chunk_sizes").asInstanceOf[JArray].arr.map(_.asInstanceOf[JInt].num.toInt)
        assert(spec.chunkSizes(spec.numPartitions - 1).toSeq === last, label)
      } else {
        val error = intercept[IllegalArgumentException](spec)
        assert(error.getMessage.contains((c \ "error").asInstanceOf[JString].s), label)
      }
    }
  }
}
