"""Fixtures every test gets."""

import pytest

from shardflow.distributed import route


@pytest.fixture(autouse=True)
def _global_route_ends_with_the_test():
    """A test that makes a placement turns the global route on (``route.enable()``: the sbp
    handler in front of every op); turn it off when the test ends, so that no later test in
    the process runs with it (or with its warned-once fallback state). A fixture that keeps a
    placement for several tests must enable the route again in each (``route.enable()``)."""
    yield
    route.disable()
