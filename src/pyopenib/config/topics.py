"""The config layer's user-facing messages: one topic per situation (Open MPI keeps
these in ``help-mca-var.txt`` and ``help-mpi-btl-openib.txt``; the wording here is ours).

Every message names where the bad input came from: an MCA variable and its source
(``default``, ``file (PATH:LINE)``, ``environment``, ``command line``) or an INI file and
line, plus the offending value.
"""

from __future__ import annotations

from ..errors import register_topics

TOPICS = {
    # MCA variables
    "mca-invalid-value": (
        "invalid value {value!r} for MCA variable {name} (source: {source}): {reason}"
    ),
    "mca-unknown-variable": "unknown MCA variable {name} (source: {source})",
    "mca-read-only": "MCA variable {name} is informational and cannot be set (source: {source})",
    "mca-param-file-missing": "MCA parameter file {path} cannot be read ({reason}) (source: {source})",
    "mca-param-file-syntax": "{path}:{line}: {reason}",
    "mca-cli-pair-repeated": (
        "MCA variable {name} was given more than once on the command line "
        "(values {first!r} and {second!r})"
    ),
    "mca-deprecated": (
        "MCA variable {old} is deprecated (source: {source}); use {new} instead "
        "(the value was applied to {new})"
    ),
    "mca-unknown-openib-name": (
        "{name} (source: {source}) is not an MCA variable of the openib BTL; it is ignored "
        "(is it misspelt?)"
    ),
    "mca-two-names": (
        "MCA variable {name} is set under two names: {winner} = {winner_value!r} "
        "(source: {winner_source}) wins over {loser} = {loser_value!r} (source: "
        "{loser_source}), as in Open MPI (a synonym is read after the name it stands for); "
        "set only one of them"
    ),
    "mca-param-files-in-file": (
        "{name} (source: {source}) has no effect in a parameter file; set it in the "
        "environment or with --mca"
    ),
    # receive_queues (help-mpi-btl-openib.txt topics, our words)
    "rq-empty": "btl_openib_receive_queues {value!r} (from {source}) defines no queue pairs",
    "rq-empty-entry": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {index} is empty "
        "(two ':' in a row, or one at an end)"
    ),
    "rq-empty-field": (
        "btl_openib_receive_queues {value!r} (from {source}): field {position} "
        "({field}) of entry {entry!r} is empty; leave out trailing fields to take their "
        "defaults, but give every field before the last one"
    ),
    "rq-number-too-big": (
        "btl_openib_receive_queues {value!r} (from {source}): field {position} "
        "({field}) of entry {entry!r} is {field_value}, above the limit {limit}"
    ),
    "rq-bad-type": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has an "
        "unknown queue type; valid types are P (per-peer) and S (shared receive queue)"
    ),
    "rq-xrc": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} asks for "
        "an XRC queue (X), which pyopenib does not support; use P or S queues"
    ),
    "rq-bad-field-count": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has "
        "{count} fields; a {kind} entry takes {low} to {high} "
        "({layout})"
    ),
    "rq-bad-number": (
        "btl_openib_receive_queues {value!r} (from {source}): field {position} "
        "({field}) of entry {entry!r} is {field_value!r}, not a non-negative integer"
    ),
    "rq-bad-window": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has "
        "rd_win {rd_win}; the credit window must be > 0"
    ),
    "rq-num-le-low": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has "
        "rd_num {rd_num} <= rd_low {rd_low}; rd_num must be > rd_low"
    ),
    "rq-num-lt-init": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has "
        "rd_num {rd_num} < rd_init {rd_init}; rd_num must be >= rd_init"
    ),
    "rq-num-lt-srq-limit": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has "
        "rd_num {rd_num} < srq_limit {srq_limit}; rd_num must be >= srq_limit"
    ),
    "rq-zero-size": (
        "btl_openib_receive_queues {value!r} (from {source}): entry {entry!r} has "
        "{field} 0; it must be >= 1"
    ),
    "rq-not-increasing": (
        "btl_openib_receive_queues {value!r} (from {source}): buffer sizes must be "
        "strictly increasing, but entry {index} ({size} bytes) follows {previous} bytes"
    ),
    "rq-too-small": (
        "btl_openib_receive_queues {value!r} (from {source}): the largest receive buffer "
        "({largest} bytes) is smaller than {variable} = {needed} (from {needed_source})"
    ),
    "rq-freelist-too-small": (
        "btl_openib_free_list_max = {free_list_max} (from {source}) is smaller than the "
        "{required} receive buffers btl_openib_receive_queues {value!r} needs"
    ),
    # device-params INI files
    "ini-file-missing": "device-params INI file {path} cannot be read ({reason})",
    "ini-syntax": "{path}:{line}: {reason}",
    "ini-bad-value": "{path}:{line}: [{section}] {key} = {value!r}: {reason}",
    "ini-errors": "{count} error(s) in device-params INI files; first: {first}",
    "ini-unknown-device": "no device {device!r} in {path} (known: {known})",
    "ini-devices-file-missing": (
        "--device {device!r} needs the device models file {path}, which cannot be read "
        "({reason}); give --vendor-id and --part-id instead"
    ),
    "ini-devices-file-bad-id": (
        "{path}: device model {model!r}: {key} = {value!r} is not a PCI id (an integer from "
        "0 to 0xffffffff)"
    ),
    # effective settings
    "peer-queues-differ": (
        "receive_queues differ between the peers, so they cannot connect "
        "(Open MPI aborts at wire-up with 'unsupported queues configuration'): {what}; "
        "local device {local_device}: {local_value!r} (from {local_origin}); "
        "remote device {remote_device}: {remote_value!r} (from {remote_origin})"
    ),
    "bad-mtu": "{where}: mtu {value!r} is not one of 256, 512, 1024, 2048, 4096 bytes",
}

register_topics(TOPICS)
