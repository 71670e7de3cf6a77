"""The generated configuration reference is committed up to date."""

from pathlib import Path

from pyopenib.config.docs import render_configuration_md

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_committed_configuration_md_matches_the_registry():
    assert DOC.read_text() == render_configuration_md(), (
        "regenerate: python -m pyopenib.config.docs > docs/configuration.md"
    )


def test_reference_lists_the_new_credits_qp_variable():
    assert "| `btl_openib_credits_qp` | int (enum) | `auto` | 5 tuner/detail |" in DOC.read_text()
