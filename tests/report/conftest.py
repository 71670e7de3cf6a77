import pytest

from pyopenib.apps.scenarios import run_scenario


@pytest.fixture(scope="session")
def t3_race_events():
    """The seed's race: bibw on Chelsio T3 with every credit message on QP 0."""
    r = run_scenario("bibw", device="chelsio-t3", credits_qp="smallest", trace=True)
    return r.tracer.events
