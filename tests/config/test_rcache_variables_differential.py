"""The registration-cache variables (leave_pinned, its pipeline variant, grdma's
print_stats) and the rendezvous-protocol ones (the openib BTL's three RDMA-pipeline
sizes, ob1's two pipeline depths, min_rdma_pipeline_size raised to eager_limit +
rdma_pipeline_send_length as ``mca_btl_base_param_verify`` does) against real Open MPI:
``ompi_info --all --parsable`` (not all are openib's, so ``--param btl openib`` does not
show them). Same way as
test_config_differential.py: skipped only when ``ompi_info`` is missing outside CI."""

import os
import shutil
import subprocess

import pytest

from pyopenib.config import load_mca
from pyopenib.config.info import render_parsable

OMPI_INFO = shutil.which("ompi_info")

if OMPI_INFO is None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI: ompi_info is missing (make test installs openmpi-bin)", pytrace=False)
    pytest.skip("ompi_info not installed (Debian openmpi-bin)", allow_module_level=True)

NAMES = (
    "mpi_leave_pinned",
    "mpi_leave_pinned_pipeline",
    "rcache_grdma_print_stats",
    "btl_openib_rdma_pipeline_send_length",
    "btl_openib_rdma_pipeline_frag_size",
    "btl_openib_min_rdma_pipeline_size",
    "pml_ob1_send_pipeline_depth",
    "pml_ob1_recv_pipeline_depth",
)
KEYS = ("value", "source", "status", "level", "type", "deprecated", "enumerator", "synonym")


def _parse(lines):
    params = {}
    for line in lines:
        parts = line.split(":", 5)
        if len(parts) == 6 and parts[3] == "param" and parts[4] in NAMES:
            key, _, value = parts[5].partition(":")
            params.setdefault(parts[4], {}).setdefault(key, []).append(value)
    return params


def _theirs(env_extra, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_")}
    env.update(env_extra, HOME=str(home))
    out = subprocess.run(
        [OMPI_INFO, "--all", "--parsable"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return _parse(out.stdout.splitlines())


def _mine(env_extra, home):
    ctx = load_mca(environ=env_extra, home=str(home))
    return _parse(render_parsable(ctx, 9, include_generic=True))


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OMPI_MCA_mpi_leave_pinned": "0"},
        {"OMPI_MCA_mpi_leave_pinned": "yes"},  # auto_bool reads bool words ...
        {"OMPI_MCA_mpi_leave_pinned": "7"},  # ... and clamps numbers
        {"OMPI_MCA_opal_leave_pinned": "1"},  # the deprecated synonym
        {"OMPI_MCA_mpi_leave_pinned_pipeline": "true", "OMPI_MCA_rcache_grdma_print_stats": "1"},
        # below the floor: raised to eager_limit + send_length, the source kept
        {
            "OMPI_MCA_btl_openib_min_rdma_pipeline_size": "0",
            "OMPI_MCA_btl_openib_eager_limit": "4096",
        },
        {
            "OMPI_MCA_btl_openib_min_rdma_pipeline_size": "4m",
            "OMPI_MCA_btl_openib_rdma_pipeline_send_length": "512k",
            "OMPI_MCA_btl_openib_rdma_pipeline_frag_size": "256k",
            "OMPI_MCA_pml_ob1_send_pipeline_depth": "8",
            "OMPI_MCA_pml_ob1_recv_pipeline_depth": "2",
        },
    ],
    ids=[
        "default",
        "off",
        "yes",
        "clamped",
        "synonym",
        "pipeline-and-stats",
        "pipeline-size-raised",
        "pipeline-sizes-set",
    ],
)
def test_leave_pinned_and_pipeline_variables_match_ompi_info(tmp_path, env):
    theirs, mine = _theirs(env, tmp_path), _mine(env, tmp_path)
    assert set(theirs) == set(mine) == set(NAMES)
    for name in NAMES:
        for key in KEYS:
            assert mine[name].get(key) == theirs[name].get(key), (name, key)


def test_a_param_file_sets_them_with_its_line_as_source(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("# site\nmpi_leave_pinned = 1\nmpi_leave_pinned_pipeline = 0\n")
    env = {"OMPI_MCA_mca_base_param_files": str(conf)}
    theirs, mine = _theirs(env, tmp_path), _mine(env, tmp_path)
    for name in NAMES:
        assert mine[name]["value"] == theirs[name]["value"]
        assert mine[name]["source"] == theirs[name]["source"]
    assert mine["mpi_leave_pinned"]["source"] == [f"file ({conf}:2)"]
