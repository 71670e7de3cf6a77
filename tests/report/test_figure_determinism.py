"""Same events, same bytes: a figure written twice is identical in every format."""

import pytest

from pyopenib.report import write_sequence_diagram


@pytest.mark.parametrize("suffix", ["svg", "pdf", "png"])
def test_a_sequence_diagram_written_twice_is_byte_identical(t3_race_events, tmp_path, suffix):
    first, second = tmp_path / f"a.{suffix}", tmp_path / f"b.{suffix}"
    write_sequence_diagram(t3_race_events, first)
    write_sequence_diagram(t3_race_events, second)
    assert first.read_bytes() == second.read_bytes()
