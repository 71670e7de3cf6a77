"""mpi4py's object model, probed on every handle class: one JSON line per rank.

Run under real Open MPI + mpi4py and under pyopenib, the two outputs must be equal
(``tests/mpi/test_handles.py``). Each probe records what a program can observe — equality,
truth, hashing, construction from another handle, ``free()`` on constants, copies and
created objects, pickling, integer handles — never a handle's value itself.
"""

import copy
import json
import pickle

from mpi4py import MPI

comm = MPI.COMM_WORLD


def outcome(fn):
    """The result of ``fn()``, or the name of the exception it raised."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the exception's class is the observation
        return type(exc).__name__


NULLS = {
    "Datatype": MPI.DATATYPE_NULL,
    "Request": MPI.REQUEST_NULL,
    "Message": MPI.MESSAGE_NULL,
    "Op": MPI.OP_NULL,
    "Group": MPI.GROUP_NULL,
    "Info": MPI.INFO_NULL,
    "Errhandler": MPI.ERRHANDLER_NULL,
    "Session": MPI.SESSION_NULL,
    "Comm": MPI.COMM_NULL,
    "Win": MPI.WIN_NULL,
    "File": MPI.FILE_NULL,
}
CONSTANTS = {
    "INT": MPI.INT,
    "SUM": MPI.SUM,
    "GROUP_EMPTY": MPI.GROUP_EMPTY,
    "INFO_ENV": MPI.INFO_ENV,
    "ERRORS_RETURN": MPI.ERRORS_RETURN,
    "MESSAGE_NO_PROC": MPI.MESSAGE_NO_PROC,
    "COMM_SELF": MPI.COMM_SELF,
    "COMM_WORLD": MPI.COMM_WORLD,
}

out = {"rank": comm.Get_rank()}

# the null handles: their class, truth, hashing, ordering, equality across classes
out["null_class"] = {k: type(v).__name__ for k, v in NULLS.items()}
out["null_truth"] = {k: bool(v) for k, v in NULLS.items()}
out["null_hash"] = {k: outcome(lambda v=v: hash(v) and "hashed") for k, v in NULLS.items()}
out["null_order"] = {k: outcome(lambda v=v: v < v) for k, v in NULLS.items()}
out["cross_equal"] = sorted(
    f"{a}=={b}" for a, x in NULLS.items() for b, y in NULLS.items() if a != b and x == y
)
out["new_equal"] = {k: type(v)() == v and type(v)(v) == v for k, v in NULLS.items()}
out["new_from_info"] = {
    k: outcome(lambda v=v: type(type(v)(MPI.INFO_NULL)).__name__) for k, v in NULLS.items()
}
out["new_from_int"] = {
    k: outcome(lambda v=v: type(type(v)(1234)).__name__) for k, v in NULLS.items()
}

# free(): a module constant stays, a copy of it becomes null (a copy of a predefined error
# handler is freed for real, as MPI_Errhandler_free: Open MPI's reference count would drop
# below zero and crash MPI_Finalize, so it is left out), so does a created object
freed = {}
for name, const in CONSTANTS.items():
    const.free()
    freed[name] = [bool(const)]
    if name != "ERRORS_RETURN":
        clone = type(const)(const)
        clone.free()
        freed[name].append(bool(clone))
out["free_constant_then_copy"] = freed
created = {
    "Isend": MPI.COMM_SELF.Isend((None, 0, MPI.BYTE), MPI.PROC_NULL),
    "Op.Create": MPI.Op.Create(lambda *_: None),
    "Get_group": MPI.COMM_SELF.Get_group(),
    "Get_errhandler": MPI.COMM_SELF.Get_errhandler(),
    "Info.Create": MPI.Info.Create(),
    "File.Open": MPI.File.Open(MPI.COMM_SELF, "/dev/null"),
    "Dup": MPI.COMM_SELF.Dup(),
    "Type.Dup": MPI.INT.Dup(),
}
for obj in created.values():
    obj.free()
out["free_created"] = {k: bool(v) for k, v in created.items()}


# pickling and copying: a constant is itself, a copy of one keeps its (sub)class
class MyInfo(MPI.Info):
    pass


class MyGroup(MPI.Group):
    pass


class MyDatatype(MPI.Datatype):
    pass


out["pickle_constant_is_itself"] = {
    k: pickle.loads(pickle.dumps(v)) is v and copy.copy(v) is v for k, v in CONSTANTS.items()
}
subclassed = {"Info": MyInfo(MPI.INFO_NULL), "Group": MyGroup(MPI.GROUP_EMPTY)}
subclassed["Datatype"] = MyDatatype(MPI.INT)
out["pickle_subclass_copy"] = {
    k: [type(pickle.loads(pickle.dumps(v))).__name__, pickle.loads(pickle.dumps(v)) == v]
    for k, v in subclassed.items()
}
info = MPI.Info.Create()
info.Set("key", "value")
out["pickle_info_items"] = pickle.loads(pickle.dumps(info)).items()
info.Free()
out["pickle_created_group"] = outcome(lambda: pickle.dumps(MPI.COMM_WORLD.Get_group().Dup()))

# integer handles round-trip to an equal object of the same class
objects = [*NULLS.values(), *CONSTANTS.values(), MPI.COMM_SELF.Get_group(), MPI.INT.Dup()]
out["fromhandle"] = [
    [type(o).__name__, type(o).fromhandle(o.handle) == o, type(type(o).fromint(o.toint())).__name__]
    for o in objects
]
out["fortran_index"] = {
    k: getattr(MPI, k).py2f()
    for k in (
        "GROUP_NULL GROUP_EMPTY INFO_NULL INFO_ENV ERRHANDLER_NULL ERRORS_ARE_FATAL ERRORS_RETURN "
        "ERRORS_ABORT MESSAGE_NULL MESSAGE_NO_PROC WIN_NULL FILE_NULL SESSION_NULL REQUEST_NULL"
    ).split()
}
out["handle_read_only"] = outcome(lambda: setattr(MPI.INFO_NULL, "handle", 0))


# subclasses construct in __new__, as mpi4py's __cinit__: a program's __new__ can dup first
class MyComm(MPI.Intracomm):
    def __new__(cls, comm=None):
        if comm is not None and comm != MPI.COMM_NULL:
            comm = comm.Dup()
        return super().__new__(cls, comm)


mine = MyComm(MPI.COMM_WORLD)
clone = mine.Clone()
out["subclass_comm"] = [
    type(mine).__name__,
    mine == MPI.COMM_WORLD,
    mine.Compare(MPI.COMM_WORLD),
    type(clone).__name__,
    type(MyComm()).__name__,
    outcome(lambda: MPI.Intercomm(MPI.COMM_WORLD)),
    outcome(lambda: MPI.Cartcomm(MPI.COMM_WORLD)),
]
clone.Free()
mine.Free()


class MyRequest(MPI.Request):
    def __new__(cls, request=None):
        return super().__new__(cls, request)


req = MyRequest(MPI.COMM_SELF.Isend((None, 0, MPI.BYTE), MPI.PROC_NULL))
out["subclass_request"] = [type(req).__name__, req.Test(), bool(req)]
out["cancel_request_null"] = outcome(MPI.REQUEST_NULL.Cancel)

# nonblocking and blocking collectives have their own tags: this order meets each its kind
flag = bytearray(4)
if comm.Get_rank() == 0:
    flag[0] = 0b1011
    request = comm.Iallreduce(MPI.IN_PLACE, [flag, MPI.INT], MPI.BAND)
    comm.Barrier()
else:
    flag[0] = 0b1101
    comm.Barrier()
    request = comm.Iallreduce(MPI.IN_PLACE, [flag, MPI.INT], MPI.BAND)
request.Wait()
out["nonblocking_across_barrier"] = flag[0]

print(json.dumps(out, sort_keys=True), flush=True)
