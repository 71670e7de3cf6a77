"""Configuration as Open MPI users know it: MCA variables with their sources, the
device-params INI files, ``btl_openib_receive_queues`` and the new
``btl_openib_credits_qp`` / ``credits_on_own_qp`` setting.

Pure functions of their inputs (environment, home directory, files and ``--mca`` pairs
are arguments); no simulation; imports no other pyopenib layer. Only
``load_mca_from_process`` reads ``os.environ``.
"""

from .catalogue import CREDITS_QP_LEVEL, SHIPPED_INI
from .device_ids import device_ids
from .device_params import (
    DeviceParams,
    DeviceParamsTable,
    IniDiagnostic,
    IniValue,
    load_device_params,
)
from .effective import (
    CreditsPolicy,
    EffectiveSettings,
    check_peer_compatibility,
    effective_settings,
)
from .mca import McaContext, McaValue, McaWarning, Source, load_mca, load_mca_from_process
from .receive_queues import (
    QueueSpec,
    credits_qp_index,
    default_receive_queues,
    format_receive_queues,
    parse_receive_queues,
    qp_inline_sizes,
)
from .variables import Variable

__all__ = [
    "CREDITS_QP_LEVEL",
    "CreditsPolicy",
    "DeviceParams",
    "DeviceParamsTable",
    "EffectiveSettings",
    "IniDiagnostic",
    "IniValue",
    "McaContext",
    "McaValue",
    "McaWarning",
    "QueueSpec",
    "SHIPPED_INI",
    "Source",
    "Variable",
    "check_peer_compatibility",
    "credits_qp_index",
    "default_receive_queues",
    "device_ids",
    "effective_settings",
    "format_receive_queues",
    "load_device_params",
    "load_mca",
    "load_mca_from_process",
    "parse_receive_queues",
    "qp_inline_sizes",
]
