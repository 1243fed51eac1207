package org.apache.spark.shuffle.adaptive.push

import org.scalatest.funsuite.AnyFunSuite

class PartitionSizePredictorSuite extends AnyFunSuite {

  test("nothing observed predicts nothing") {
    assert(new PartitionSizePredictor(3).predicted(10).toSeq === Seq(0.0, 0.0, 0.0))
  }

  test("each partition's bytes so far, scaled to all map tasks by the mean per map seen") {
    val predictor = new PartitionSizePredictor(3)
    predictor.observe(Array(0, 2), Array(100, 10))
    predictor.observe(Array(0, 1), Array(300, 40))
    assert(predictor.mapsObserved === 2)
    assert(predictor.predicted(10).toSeq === Seq(2000.0, 200.0, 50.0))
  }

  test("with every map seen the prediction is what was seen, also past a retried map") {
    val predictor = new PartitionSizePredictor(1)
    (1 to 3).foreach(_ => predictor.observe(Array(0), Array(7)))
    assert(predictor.predicted(2).toSeq === Seq(21.0))
    assert(predictor.predicted(3).toSeq === Seq(21.0))
  }

  test("a Zipf-skewed shuffle: a quarter of the maps predicts the final sizes within 10%") {
    val rng = new scala.util.Random(5)
    val partitions = 16
    val weights = (1 to partitions).map(k => 1.0 / (k * k))
    val maps =
      (1 to 40).map(_ => weights.map(w => (w * 1e6 * (0.9 + 0.2 * rng.nextDouble())).toLong))
    val predictor = new PartitionSizePredictor(partitions)
    maps.take(10).foreach(m => predictor.observe(m.indices.toArray, m.toArray))
    val predicted = predictor.predicted(maps.size)
    val actual = maps.transpose.map(_.sum.toDouble)
    predicted.zip(actual).foreach { case (p, a) => assert(math.abs(p - a) / a < 0.1, (p, a)) }
  }
}
