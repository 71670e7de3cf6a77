"""Every MCA variable pyopenib reads, registered once with Open MPI 4.1's name, type,
default and level (checked against ``ompi_info --param btl openib --level 9 --parsable``
by the differential tests), plus the one new variable, ``btl_openib_credits_qp``.

Only variables the model acts on are registered: listing a knob that changes nothing
would mislead. Help texts are written for pyopenib (they say what the simulation does
with the value). Order is registration order, which is also ``info``'s order, and
matters for ``btl_openib_receive_queues``, whose default is computed from the
eager_limit and max_send_size registered before it.
"""

from __future__ import annotations

from importlib import resources

from .receive_queues import default_receive_queues
from .variables import AUTO_BOOL, Variable

__all__ = ["CREDITS_QP_LEVEL", "SHIPPED_INI", "openib_variables"]

SHIPPED_INI = str(resources.files("pyopenib") / "data" / "mca-btl-openib-device-params.ini")
"""The device-params INI file pyopenib ships (Open MPI's devices plus credits_on_own_qp)."""

CREDITS_QP_LEVEL = 5
"""``tuner/detail``: a per-site tuning choice, like Open MPI's btl_openib_allow_ib."""

_BOOL_HINT = "(0|f|false|no = off; 1|t|true|yes = on)"


def _openib(name: str, type_: str, default: object, help_: str, level: int = 9, **kw) -> Variable:
    return Variable("btl", "openib", name, type_, default, help_, level, **kw)


def _receive_queues_default(values) -> str:
    return default_receive_queues(
        values["btl_openib_eager_limit"], values["btl_openib_max_send_size"]
    )


def _min_rdma_pipeline_floor(values) -> int:
    return values["btl_openib_eager_limit"] + values["btl_openib_rdma_pipeline_send_length"]


def openib_variables(home: str | None) -> tuple[Variable, ...]:
    """The registry, in registration order. ``home`` gives the default param file."""
    param_file_default = f"{home.rstrip('/')}/.openmpi/mca-params.conf" if home else ""
    return (
        Variable(
            "mca",
            "base",
            "param_files",
            "string",
            param_file_default,
            "Comma-separated list of MCA parameter files ('name = value' lines); when "
            "several set the same variable the leftmost file wins; 'none' reads no file",
            2,
            synonyms=("mca_param_files",),
        ),
        _openib(
            "warn_no_device_params_found",
            "bool",
            True,
            "Warn when the device-params INI files have no section for the local device "
            f"{_BOOL_HINT}",
            deprecated_synonyms=("btl_openib_warn_no_hca_params_found",),
        ),
        _openib(
            "device_param_files",
            "string",
            SHIPPED_INI,
            "Colon-separated list of device-params INI files; all are read in order and a "
            "later section for the same device overrides earlier values key by key",
            deprecated_synonyms=("btl_openib_hca_param_files",),
        ),
        _openib(
            "device_type",
            "enum",
            "all",
            "Which adapters to use: infiniband (IB HCAs only), iwarp (iWARP RNICs only) or all",
            enumerator=((0, "infiniband"), (0, "ib"), (1, "iwarp"), (1, "iw"), (2, "all")),
        ),
        _openib(
            "free_list_num", "int", 8, "Initial number of send fragments per free list", minimum=1
        ),
        _openib(
            "free_list_max",
            "int",
            -1,
            "Largest number of fragments a free list may hold (-1 = unbounded); must cover "
            "every receive buffer the receive_queues post",
            minimum=-1,
        ),
        _openib("free_list_inc", "int", 32, "Fragments added when a free list grows", minimum=1),
        _openib(
            "cq_size",
            "int",
            8192,
            "Smallest completion-queue size; CQs grow with the number of peers and queues",
            deprecated_synonyms=("btl_openib_ib_cq_size",),
            minimum=1,
        ),
        _openib(
            "max_inline_data",
            "int",
            -1,
            "Largest payload sent inline in the work request (-1 = ask the device); when "
            "left at its default the device's INI max_inline_data is used",
            deprecated_synonyms=("btl_openib_ib_max_inline_data",),
            minimum=-1,
        ),
        _openib(
            "ib_min_rnr_timer",
            "unsigned_int",
            25,
            "Receiver-not-ready NAK timer code (0-31) a receiver advertises; the sender "
            "waits this long before retrying a SEND that found no receive buffer",
            maximum=31,
        ),
        _openib(
            "ib_timeout",
            "unsigned_int",
            20,
            "Local ACK timeout code (0-31): the sender waits 4.096 us * 2^value for an ACK "
            "before retransmitting",
            maximum=31,
        ),
        _openib(
            "ib_retry_count",
            "unsigned_int",
            7,
            "Transport retries (0-7) after an ACK timeout before the QP fails",
            maximum=7,
        ),
        _openib(
            "ib_rnr_retry",
            "unsigned_int",
            7,
            "Receiver-not-ready retries (0-7, 7 = unlimited) for SRQ queues; per-peer queues "
            "use 0 because credit flow control is meant to make RNR impossible",
            maximum=7,
        ),
        _openib(
            "use_eager_rdma",
            "int",
            -1,
            "Eager RDMA for small messages to frequent peers (-1 = the device's INI "
            "use_eager_rdma, 0 = off, 1 = on)",
            minimum=-1,
        ),
        _openib(
            "eager_rdma_threshold",
            "int",
            16,
            "Messages received from a peer before eager RDMA to it is set up",
            minimum=1,
        ),
        _openib(
            "max_eager_rdma",
            "int",
            16,
            "Largest number of peers with eager RDMA buffers",
            minimum=0,
        ),
        _openib(
            "eager_rdma_num",
            "int",
            16,
            "Eager RDMA buffers per peer; as in Open MPI the value shown is one more than "
            "the value set (the ring keeps one slot free)",
            minimum=1,
            increment=1,
        ),
        _openib(
            "mtu",
            "int",
            0,
            "Path MTU code when the INI files give none: 1 = 256, 2 = 512, 3 = 1024, "
            "4 = 2048, 5 = 4096 bytes (0 = use the INI value or 1024)",
            enumerator=((1, "256B"), (2, "512B"), (3, "1k"), (4, "2k"), (5, "4k")),
            deprecated_synonyms=("btl_openib_ib_mtu",),
        ),
        _openib(
            "enable_srq_resize",
            "bool",
            True,
            "Start shared receive queues with rd_init buffers and grow them towards rd_num "
            f"when the SRQ-limit event fires {_BOOL_HINT}",
        ),
        _openib(
            "rndv_eager_limit",
            "size_t",
            12288,
            "Bytes of a rendezvous message sent with its first fragment",
            4,
        ),
        _openib(
            "eager_limit",
            "size_t",
            12288,
            "Largest message (PML header included) sent eagerly; larger ones use rendezvous",
            4,
        ),
        _openib(
            "max_send_size",
            "size_t",
            65536,
            "Largest fragment of a pipelined send",
            4,
        ),
        _openib(
            "rdma_pipeline_send_length",
            "size_t",
            1048576,
            "Bytes at the end of a rendezvous message above min_rdma_pipeline_size sent by "
            "copy in/out (send fragments of max_send_size) when the buffers are not left "
            "pinned; the bytes before them (after the first fragment) go by the RDMA "
            "pipeline",
            4,
        ),
        _openib(
            "rdma_pipeline_frag_size",
            "size_t",
            1048576,
            "Largest piece of the RDMA pipeline: the receiver registers its buffer piece by "
            "piece, each written by one RDMA write and released at its FIN (0 = no limit)",
            4,
        ),
        _openib(
            "min_rdma_pipeline_size",
            "size_t",
            262144,
            "Without leave_pinned, rendezvous messages up to this size register both "
            "buffers whole and go by RDMA; larger ones use the RDMA pipeline and copy "
            "in/out. Raised to at least eager_limit + rdma_pipeline_send_length, as Open "
            "MPI's btl base does",
            4,
            floor_fn=_min_rdma_pipeline_floor,
            floor_text="eager_limit + rdma_pipeline_send_length",
        ),
        _openib(
            "receive_queues",
            "string",
            None,
            "Colon-separated receive queues, smallest buffers first: "
            "P,size,num[,low[,window[,reserve]]] for per-peer queues, "
            "S,size,num[,low[,sd_max[,init[,srq_limit]]]] for shared receive queues. "
            "An explicit value beats the device's INI receive_queues, which beats this "
            "default (computed from eager_limit and max_send_size)",
            default_fn=_receive_queues_default,
        ),
        _openib(
            "credits_qp",
            "enum",
            "auto",
            "Where the explicit credit messages of each per-peer queue travel. A receiver "
            "re-posts buffers on queue X and then returns the credits; when the credit "
            "message goes on another QP the peer can send into X before the NIC has made "
            "the buffers available (a lost race: RNR NAK on InfiniBand, TERMINATE on iWARP, "
            "where a Chelsio T3 queues receive posts behind the QP's sends). "
            "smallest = all on the first P queue (Open MPI's behaviour); own = each on its "
            "own queue, ordered after the re-post; auto = the local device's INI "
            "credits_on_own_qp (1 = own, 0 = smallest), smallest without one",
            CREDITS_QP_LEVEL,
            enumerator=((0, "auto"), (1, "smallest"), (2, "own")),
        ),
        Variable(
            "mpi",
            "",
            "leave_pinned",
            "int",
            -1,
            "Keep rendezvous buffers registered after their transfer (the registration "
            "cache's leave-pinned mode), so the next transfer of the same memory finds its "
            "registration: 1 = on, 0 = off (register per transfer, release at FIN), "
            "auto = on, as Open MPI 4.1 turns it on when its memory hooks work (they do on "
            "Linux; pyopenib's are the buffers' lifetimes)",
            9,
            enumerator=AUTO_BOOL,
            deprecated_synonyms=("opal_leave_pinned",),
            project="ompi",
        ),
        Variable(
            "mpi",
            "",
            "leave_pinned_pipeline",
            "bool",
            False,
            "Open MPI's leave-pinned pipeline: the registration cache keeps registrations "
            "(as leave_pinned) while the large-message protocol stays the pipelined one; "
            "auto leave_pinned then means off. Setting both to true keeps leave_pinned "
            f"{_BOOL_HINT}",
            9,
            deprecated_synonyms=("opal_leave_pinned_pipeline",),
            project="ompi",
        ),
        Variable(
            "pml",
            "ob1",
            "send_pipeline_depth",
            "int",
            3,
            "Send fragments of one rendezvous message in flight at once when all of its "
            "rest travels by copy in/out (the receiver's ACK says NORDMA); the next leaves "
            "when one completes locally",
            9,
            minimum=1,
            project="ompi",
        ),
        Variable(
            "pml",
            "ob1",
            "recv_pipeline_depth",
            "int",
            4,
            "RDMA-pipeline pieces of one rendezvous message a receiver has registered and "
            "asked for (PUT) at once; the next is asked for when one's FIN arrives",
            9,
            minimum=1,
            project="ompi",
        ),
        Variable(
            "rcache",
            "grdma",
            "print_stats",
            "bool",
            False,
            "After a run, print each process's registration-cache counters on stderr, as "
            "Open MPI does when the process closes its device: hits, misses, found/not "
            f"found (lookups ob1 never makes), evicted, and the registrations kept {_BOOL_HINT}",
            9,
        ),
    )
