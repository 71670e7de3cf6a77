"""mpi4py.rc and MPI4PY_RC_* as the rank's `import mpi4py.MPI` reads them: arguments
`key=value` set rc attributes, `env:KEY=value` environment variables, before the import."""

import os
import sys
import warnings

import mpi4py

VALUES = {"true": True, "false": False, "none": None, "bad": -7}
for arg in sys.argv[1:]:
    key, value = arg.split("=")
    if key.startswith("env:"):
        os.environ[key[4:]] = value
    else:
        setattr(mpi4py.rc, key, VALUES.get(value, value))

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from mpi4py import MPI
print("warnings", sorted(str(w.message) for w in caught))
print("initialized", MPI.Is_initialized(), MPI.Is_finalized())
print("rc", sorted(vars(mpi4py.rc).items()))
if not MPI.Is_initialized():
    print("provided", MPI.Init_thread(MPI.THREAD_SERIALIZED))
print("query", MPI.Query_thread())


def handler(obj):
    eh = obj.Get_errhandler()
    try:
        if eh == MPI.ERRORS_RETURN:
            return "return"
        return "fatal" if eh == MPI.ERRORS_ARE_FATAL else "other"
    finally:
        eh.Free()


dup = MPI.COMM_WORLD.Dup()
fh = MPI.File.Open(MPI.COMM_SELF, os.devnull, MPI.MODE_WRONLY)
print("handlers", handler(MPI.COMM_WORLD), handler(MPI.COMM_SELF), handler(dup), handler(fh))
fh.Close()
dup.Free()
print("pickle", MPI.pickle.PROTOCOL, MPI.pickle.THRESHOLD)
print("rank", MPI.COMM_WORLD.Get_rank())
