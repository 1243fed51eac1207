"""The rest of the local A/B's shapes on the multi-host cluster (make test-all): with
test_cluster_ab's, every shape under every cluster variant."""

import pytest
import test_rdd_ab  # noqa: F401  (registers its workloads in LOCAL_AB)
import test_sql_ab  # noqa: F401
from ab_conf import CLUSTER_CONF, CLUSTER_SHAPES, CLUSTER_VARIANT_CONF, CLUSTER_VARIANTS, LOCAL_AB

from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.slow]

ab = ShuffleComparison(conf=CLUSTER_CONF, variants=CLUSTER_VARIANTS, variant_conf=CLUSTER_VARIANT_CONF)
ab.extend(LOCAL_AB, names=[name for name in LOCAL_AB.names if name not in CLUSTER_SHAPES])


@pytest.fixture(scope="module", autouse=True)
def on_the_cluster(pyspark_shuffle_cluster):
    ab.master = pyspark_shuffle_cluster.master_url
    yield pyspark_shuffle_cluster


@pytest.mark.parametrize("name", ab.names)
def test_same_result_on_the_cluster(name):
    ab.assert_same(name)


def test_the_cluster_suites_together_compare_every_local_shape():
    import test_cluster_ab

    assert set(ab.names) | set(test_cluster_ab.ab.names) >= set(LOCAL_AB.names)
    assert not set(ab.names) & set(test_cluster_ab.ab.names)
