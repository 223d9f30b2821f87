import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("JANUS_LIKE_VERIFY", "1")  # the IR verifier runs after every pass in tests
# graphs are never handed back to eager by timing here, so counts do not depend on the machine's
# load (tests/jit/test_choice.py tests the measured choice, the default, with fixed outcomes)
os.environ.setdefault("JANUS_LIKE_CHOOSE", "graph")

settings.register_profile("ci", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(config, items):
    from janus_like import backend

    if backend.gpu_available():
        return
    skip = pytest.mark.skip(reason=f"GPU tests skipped: {backend.gpu_unavailable_reason()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
