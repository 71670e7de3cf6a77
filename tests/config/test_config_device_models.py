"""The shipped INI file and the device models (data/devices.toml, owned by hw) agree:
every model's ids resolve to the INI section of the same name, and credits_on_own_qp
follows the project rule (1 for Ethernet-based RNICs: iWARP and Broadcom RoCE, or a
shared send/receive work queue; 0 for InfiniBand HCAs)."""

import tomllib
from pathlib import Path

import pytest

from pyopenib.config import SHIPPED_INI, device_ids, load_device_params
from pyopenib.config.device_ids import DEVICES_TOML

if not Path(DEVICES_TOML).exists():
    pytest.skip("data/devices.toml not present yet", allow_module_level=True)

MODELS = {
    key: table
    for key, table in tomllib.loads(Path(DEVICES_TOML).read_text()).items()
    if isinstance(table, dict) and "vendor_id" in table
}


@pytest.fixture(scope="module")
def shipped():
    return load_device_params([SHIPPED_INI])


@pytest.mark.parametrize("key", sorted(MODELS))
def test_device_model_maps_to_its_ini_section_and_the_credits_rule(shipped, key):
    model = MODELS[key]
    # a variant (e.g. a ConnectX's RoCE personality) has its primary's PCI ids, so the
    # INI gives it the primary's values: the rule applies to the primary
    rule = MODELS[model.get("variant_of", key)]
    wants_own = (
        rule["transport"] == "iwarp"
        or rule.get("work_queue") == "shared"
        or rule.get("link_layer") == "ethernet"
    )
    for vendor in model["vendor_id"]:
        for part in model["vendor_part_ids"]:
            params = shipped.lookup(vendor, part)
            assert params.found, (key, hex(vendor), part)
            assert params.credits_on_own_qp.value is wants_own, key
    assert device_ids(key)[:2] == (model["vendor_id"][0], model["vendor_part_ids"][0])


def test_device_names_and_aliases_resolve_case_insensitively():
    assert device_ids("Chelsio T3")[2] == "chelsio-t3"
    assert device_ids("CXGB3")[2] == "chelsio-t3"
