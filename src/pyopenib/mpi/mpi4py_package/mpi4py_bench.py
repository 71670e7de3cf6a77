"""``mpi4py.bench``: the benchmarks and tests ``python -m mpi4py.bench <command>`` runs.

``helloworld`` (each rank greets, in rank order), ``ringtest`` (a message around the ring
of ranks, timed) and ``pingpong`` (ranks 0 and 1, every power-of-two size, buffers or
pickled objects, in-band or out-of-band with ``pkl5``), with mpi4py 4.1's options and
output. Times are ``MPI.Wtime``: under pyopenib, simulated seconds of the modelled fabric.
mpi4py's fourth command, ``futures`` (task throughput of an ``MPIPoolExecutor``, or of a
process, thread or interpreter pool, over a sweep of task sizes), is not built yet: it is
refused by name (``mpi4py.futures`` itself, spawning included, is provided).

Every import of ``mpi4py`` happens in the commands, so the module is also the program a
rank runs for ``-m mpi4py.bench`` (``package.program_command``). The file is not
``bench.py``: a module named like pyopenib's ``bench`` package would shadow it
(docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import statistics
import sys
from argparse import REMAINDER, ArgumentParser
from pathlib import Path

__all__ = ["helloworld", "main", "pingpong", "ringtest"]

_NAME = "mpi4py.bench"


def _parser(command: str = "", usage: str | None = None) -> ArgumentParser:
    python = Path(sys.executable).name
    return ArgumentParser(prog=f"{python} -m {_NAME} {command}".strip(), usage=usage)


def _quiet_option(parser: ArgumentParser, verbose: bool) -> None:
    parser.add_argument(
        "-q", "--quiet", action="store_false", dest="verbose", default=verbose, help="quiet output"
    )


def _mpi():
    from mpi4py import MPI

    return MPI


def helloworld(comm, args=None, verbose: bool = True) -> str:
    """Hello, World! using MPI: each rank prints its greeting after the rank before it
    (a zero-byte message passes the turn), so the lines come out in rank order."""
    parser = _parser("helloworld")
    _quiet_option(parser, verbose)
    options = parser.parse_args(args)
    mpi = _mpi()
    size, rank = comm.Get_size(), comm.Get_rank()
    width = len(str(size - 1))
    message = (
        f"Hello, World! I am process {rank:{width}d} of {size} on {mpi.Get_processor_name()}.\n"
    )
    comm.Barrier()
    if rank > 0:
        comm.Recv([None, "B"], rank - 1)
    if options.verbose:
        sys.stdout.write(message)
        sys.stdout.flush()
    if rank < size - 1:
        comm.Send([None, "B"], rank + 1)
    comm.Barrier()
    return message


def _ring(comm, nbytes: int, loop: int, skip: int) -> float:
    """Seconds for ``loop`` trips of an ``nbytes`` message around the ring (after ``skip``
    untimed trips): rank 0 sends and waits for it to come back, the others pass it on."""
    from array import array

    wtime = _mpi().Wtime
    size, rank = comm.Get_size(), comm.Get_rank()
    source, dest = (rank - 1) % size, (rank + 1) % size
    sendmsg = array("B", [42]) * nbytes
    recvmsg = array("B", [0]) * nbytes
    if size > 1 and rank > 0:
        sendmsg = recvmsg  # pass on what arrived
    start = wtime()
    for i in range(loop + skip):
        if i == skip:
            start = wtime()
        if size == 1:
            comm.Sendrecv(sendmsg, dest, 0, recvmsg, source, 0)
        elif rank == 0:
            comm.Send(sendmsg, dest, 0)
            comm.Recv(recvmsg, source, 0)
        else:
            comm.Recv(recvmsg, source, 0)
            comm.Send(sendmsg, dest, 0)
    elapsed = wtime() - start
    if rank == 0 and sendmsg != recvmsg:
        import warnings

        warnings.warn("received message does not match!", stacklevel=2)
    return elapsed


def ringtest(comm, args=None, verbose: bool = True) -> float:
    """Time a message going around the ring of processes."""
    parser = _parser("ringtest")
    _quiet_option(parser, verbose)
    parser.add_argument("-n", "--size", type=int, dest="size", default=1, help="message size")
    parser.add_argument(
        "-s", "--skip", type=int, dest="skip", default=0, help="number of warm-up iterations"
    )
    parser.add_argument(
        "-l", "--loop", type=int, dest="loop", default=1, help="number of iterations"
    )
    options = parser.parse_args(args)
    comm.Barrier()
    elapsed = _ring(comm, options.size, options.loop, options.skip)
    if options.verbose and comm.Get_rank() == 0:
        sys.stdout.write(
            f"time for {options.loop} loops = {elapsed:g} seconds "
            f"({comm.Get_size()} processes, {options.size} bytes)\n"
        )
        sys.stdout.flush()
    return elapsed


def _pingpong_parser(verbose: bool) -> ArgumentParser:
    parser = _parser("pingpong")
    _quiet_option(parser, verbose)
    add = parser.add_argument
    add("-m", "--min-size", type=int, dest="min_size", default=1, help="minimum message size")
    add("-n", "--max-size", type=int, dest="max_size", default=1 << 30, help="maximum message size")
    add("-s", "--skip", type=int, dest="skip", default=100, help="number of warm-up iterations")
    add("-l", "--loop", type=int, dest="loop", default=10000, help="number of iterations")
    add(
        "-a",
        "--array",
        dest="array",
        default="numpy",
        choices=["numpy", "cupy", "numba", "none"],
        help="use NumPy/CuPy/Numba arrays",
    )
    add("-p", "--pickle", action="store_true", help="use pickle-based send and receive")
    add("--protocol", type=int, default=None, help="pickle protocol version")
    add(
        "-o",
        "--outband",
        action="store_true",
        help="use out-of-band pickle-based send and receive",
    )
    add("--threshold", type=int, default=None, help="size threshold for out-of-band pickle buffers")
    add("--skip-large", type=int, dest="skip_large", default=10)
    add("--loop-large", type=int, dest="loop_large", default=1000)
    add("--large-size", type=int, dest="large_size", default=1 << 14)
    add("--skip-huge", type=int, dest="skip_huge", default=1)
    add("--loop-huge", type=int, dest="loop_huge", default=10)
    add("--huge-size", type=int, dest="huge_size", default=1 << 20)
    add("--no-header", action="store_false", dest="print_header", default=True)
    add("--no-stats", action="store_false", dest="print_stats", default=True)
    return parser


def _allocator(kind: str):
    """``nbytes -> buffer`` for ``--array``: NumPy arrays, or bytearrays for ``none``
    (and when NumPy is absent). The simulated job has no GPU for CuPy or Numba arrays."""
    if kind in ("cupy", "numba"):
        raise SystemExit(
            f"{_NAME} pingpong: --array {kind} needs a GPU; pyopenib's ranks have none"
        )
    if kind == "numpy":
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None:
            return lambda nbytes: numpy.empty(nbytes, "B")
    return bytearray


def pingpong(comm, args=None, verbose: bool = True) -> list[tuple[int, float, float]]:
    """Time messages between ranks 0 and 1 (a rank alone sends to itself): for each
    power-of-two size in range, the mean and standard deviation of half a round trip,
    with fewer iterations past ``--large-size`` and ``--huge-size``."""
    options = _pingpong_parser(verbose).parse_args(args)
    mpi = _mpi()
    use_pickle = options.pickle or options.outband
    if options.outband:
        from mpi4py.util import pkl5

        comm = pkl5.Intracomm(comm)
        if options.threshold is not None:
            pkl5.pickle.THRESHOLD = options.threshold
    if use_pickle and options.protocol is not None:
        mpi.pickle.PROTOCOL = options.protocol
    allocate = _allocator(options.array)
    if use_pickle:
        send, recv, sendrecv = comm.send, comm.recv, comm.sendrecv
    else:
        send, recv, sendrecv = comm.Send, comm.Recv, comm.Sendrecv
    wtime = mpi.Wtime
    rank, size = comm.Get_rank(), comm.Get_size()
    sizes = [1 << i for i in range(33) if options.min_size <= 1 << i <= options.max_size]
    skip, loop = options.skip, options.loop
    result = []
    for nbytes in sizes:
        if nbytes > options.large_size:
            skip, loop = min(skip, options.skip_large), min(loop, options.loop_large)
        if nbytes > options.huge_size:
            skip, loop = min(skip, options.skip_huge), min(loop, options.loop_huge)
        if use_pickle:
            s_msg, r_msg = allocate(nbytes), None
        else:
            s_msg = [allocate(nbytes), nbytes, mpi.BYTE]
            r_msg = [allocate(nbytes), nbytes, mpi.BYTE]
        times = []
        comm.Barrier()
        for i in range(loop + skip):
            start = wtime()
            if size == 1:
                sendrecv(s_msg, 0, 0, r_msg, 0, 0)
                sendrecv(s_msg, 0, 0, r_msg, 0, 0)
            elif rank == 0:
                send(s_msg, 1, 0)
                recv(r_msg, 1, 0)
            elif rank == 1:
                recv(r_msg, 0, 0)
                send(s_msg, 0, 0)
            if i >= skip:
                times.append((wtime() - start) / 2)
        mean = statistics.mean(times) if times else float("nan")
        stdev = statistics.stdev(times) if len(times) > 1 else 0.0
        result.append((nbytes, mean, stdev))
        if options.verbose and rank == 0:
            _print_pingpong_line(options, nbytes, mean, stdev, loop)
    return result


def _print_pingpong_line(options, nbytes: int, mean: float, stdev: float, loop: int) -> None:
    if options.print_header:
        options.print_header = False
        print("# MPI PingPong Test")
        header = "# Size [B]  Bandwidth [MB/s]"
        if options.print_stats:
            header += " | Time Mean [s] \u00b1 StdDev [s]  Samples"
        print(header, flush=True)
    line = f"{nbytes:10d}{nbytes / mean / 1e6:18.2f}"
    if options.print_stats:
        line += f" | {mean:.7e} \u00b1 {stdev:.4e} {loop:8d}"
    print(line, flush=True)


COMMANDS = {"helloworld": helloworld, "ringtest": ringtest, "pingpong": pingpong}
"""The commands by name."""


def main(args=None) -> None:
    """``python -m mpi4py.bench [--threads | --no-threads] [--thread-level L] <command>
    [args]``; an unknown command is an argparse error on rank 0 (exit 2 on every rank)."""
    parser = _parser(usage="%(prog)s [options] <command> [args]")
    parser.add_argument(
        "--threads",
        action="store_true",
        dest="threads",
        default=None,
        help="initialize MPI with thread support",
    )
    parser.add_argument(
        "--no-threads",
        action="store_false",
        dest="threads",
        default=None,
        help="initialize MPI without thread support",
    )
    parser.add_argument(
        "--thread-level",
        dest="thread_level",
        default=None,
        metavar="LEVEL",
        choices="single funneled serialized multiple".split(),
        help="initialize MPI with required thread level",
    )
    parser.add_argument("command", metavar="<command>", help="benchmark command to run")
    parser.add_argument("args", nargs=REMAINDER, metavar="[args]", help="arguments for command")
    options = parser.parse_args(args)
    import mpi4py

    if options.threads is not None:
        mpi4py.rc.threads = options.threads
    if options.thread_level is not None:
        mpi4py.rc.thread_level = options.thread_level
    comm = _mpi().COMM_WORLD
    command = COMMANDS.get(options.command)
    if command is None:
        if comm.Get_rank() == 0:
            if options.command == "futures":
                parser.error("command 'futures' is not provided by pyopenib's mpi4py.bench")
            parser.error(f"unknown command {options.command!r}")
        parser.exit(2)
    command(comm, options.args)
    parser.exit()


if __name__ == "__main__":
    main()
