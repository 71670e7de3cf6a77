"""Print, as one JSON line per rank, what a program can observe of mpi4py.MPI's surface:
names, integer constants, error classes and strings, Info, error handlers, attributes and
keyvals. tests/mpi/test_namespace.py runs it under real mpirun + mpi4py and under pyopenib."""

import json
import os
import pickle

from mpi4py import MPI


def outcome(fn):
    """What a call does: ("ok", value) or ("raises", exception class or MPI error class)."""
    try:
        return ["ok", fn()]
    except MPI.Exception as exc:
        return ["MPI.Exception", exc.Get_error_class()]
    except Exception as exc:  # noqa: BLE001 - the kind of failure is the observation
        return [
            "raises",
            "NotImplementedError" if isinstance(exc, NotImplementedError) else type(exc).__name__,
        ]


world = MPI.COMM_WORLD
rank = world.Get_rank()
out = {"rank": rank}
out["names"] = sorted(n for n in dir(MPI) if not n.startswith("__"))
out["ints"] = {n: getattr(MPI, n) for n in out["names"] if type(getattr(MPI, n)) is int}
out["vendor"] = [MPI.get_vendor()[0], list(MPI.get_vendor()[1]), list(MPI.Get_version())]
out["error_strings"] = [outcome(lambda c=c: MPI.Get_error_string(c)) for c in range(-1, 95)]
out["error_classes"] = [outcome(lambda c=c: MPI.Get_error_class(c)) for c in range(-1, 95)]
exc = MPI.Exception(MPI.ERR_TRUNCATE)
out["exception"] = [
    repr(exc),
    str(exc),
    int(exc),
    exc == MPI.ERR_TRUNCATE,
    bool(MPI.Exception()),
    repr(MPI.Exception(-5)),
    isinstance(exc, RuntimeError),
]
new_class = MPI.Add_error_class()
new_code = MPI.Add_error_code(new_class)
MPI.Add_error_string(new_code, "rank-local error")
out["added_errors"] = [
    new_class,
    new_code,
    MPI.Get_error_class(new_code),
    MPI.Get_error_string(new_class),
    MPI.Get_error_string(new_code),
    world.Get_attr(MPI.LASTUSEDCODE),
    outcome(lambda: MPI.Add_error_code(12345)),
    outcome(lambda: MPI.Remove_error_class(new_class)),
]

env = MPI.INFO_ENV
out["info_env"] = {k: env.Get(k) for k in ("maxprocs", "soft", "arch", "thread_level")}
out["info_env_keys"] = [k for k in env.keys() if k != "ompi_positioned_file_dir"]
out["info_env_argv"] = os.path.basename(env.Get("argv") or "")
info = MPI.Info.Create({"b": "2", "a": "1"})
info["c"] = "3"
out["info"] = [
    info.items(),
    info.Get_nthkey(0),
    info.Get_nkeys(),
    info.get("zz", "d"),
    outcome(lambda: info.Get("k" * 40)),
    outcome(lambda: info.Set("k", "")),
    outcome(lambda: info.Set("k", "v" * 300)),
    outcome(lambda: info.Delete("zz")),
    outcome(lambda: info.Get_nthkey(7)),
    outcome(lambda: MPI.INFO_NULL.Get("a")),
    outcome(lambda: MPI.INFO_NULL.Dup()),
    info.Dup().items(),
    pickle.loads(pickle.dumps(info)).items(),
    info.popitem(),
    len(info),
    bool(MPI.INFO_NULL),
    pickle.loads(pickle.dumps(MPI.INFO_NULL)) is MPI.INFO_NULL,
    outcome(lambda: MPI.Info.Create(items=123)),
    outcome(lambda: MPI.INFO_NULL["x"]),
]
out["info_types"] = [
    outcome(lambda: info.Set(1, "a")),
    outcome(lambda: info.Set("a", 1)),
    outcome(lambda: info.Get(3)),
    outcome(lambda: 3 in info),
    outcome(lambda: info.Set(b"k", b"v")),
    outcome(lambda: info.Get(b"k")),
]
info.Free()
out["info_freed"] = [info == MPI.INFO_NULL, bool(info)]

comm = world.Dup()
eh = comm.Get_errhandler()
calls = []
user = MPI.Comm.Create_errhandler(lambda c, code: calls.append([c == comm, code]))
comm.Set_errhandler(user)
comm.Call_errhandler(MPI.ERR_OTHER)
after_user = outcome(lambda: comm.Send(b"x", dest=world.Get_size() + 5))
comm.Set_errhandler(MPI.ERRORS_RETURN)
out["errhandler"] = [
    world.Get_errhandler() == MPI.ERRORS_RETURN,
    MPI.COMM_SELF.Get_errhandler() == MPI.ERRORS_RETURN,
    eh == MPI.ERRORS_RETURN,
    calls,
    after_user,
    bool(MPI.ERRHANDLER_NULL),
    bool(MPI.ERRORS_ABORT),
    bool(MPI.ERRORS_ARE_FATAL),
    outcome(lambda: comm.Set_errhandler(MPI.ERRHANDLER_NULL)),
    pickle.loads(pickle.dumps(MPI.ERRORS_RETURN)) is MPI.ERRORS_RETURN,
    outcome(lambda: user.__reduce__()),
]
user.Free()
out["errhandler"] += [
    user == MPI.ERRHANDLER_NULL,
    outcome(MPI.ERRORS_RETURN.Free),
    bool(MPI.ERRORS_RETURN),
]

keys = ("TAG_UB", "IO", "WTIME_IS_GLOBAL", "APPNUM", "UNIVERSE_SIZE", "LASTUSEDCODE")
out["world_attrs"] = [world.Get_attr(getattr(MPI, k)) for k in keys[:-1]]
out["self_attrs"] = [MPI.COMM_SELF.Get_attr(getattr(MPI, k)) for k in keys]
out["dup_attrs"] = [comm.Get_attr(getattr(MPI, k)) for k in keys]
deleted = []
kv_copy = MPI.Comm.Create_keyval(
    copy_fn=lambda o, k, v: v + ["copied"], delete_fn=lambda o, k, v: deleted.append(v)
)
kv_true = MPI.Comm.Create_keyval(copy_fn=True)
kv_none = MPI.Comm.Create_keyval()
kv_int = MPI.Comm.Create_keyval(nopython=True)
kv_type = MPI.Datatype.Create_keyval()
kv_win = MPI.Win.Create_keyval()
comm.Set_attr(kv_copy, ["v"])
comm.Set_attr(kv_true, "same")
comm.Set_attr(kv_none, "not copied")
comm.Set_attr(kv_int, 42)
dup = comm.Dup()
out["keyvals"] = [
    [kv_true - kv_copy, kv_none - kv_copy, kv_type - kv_copy, kv_win - kv_copy],
    dup.Get_attr(kv_copy),
    dup.Get_attr(kv_true),
    dup.Get_attr(kv_none),
    dup.Get_attr(kv_int),
]
dup.Free()
comm.Set_attr(kv_copy, ["replaced"])
comm.Delete_attr(kv_copy)
out["attr_errors"] = [
    outcome(lambda: world.Set_attr(MPI.TAG_UB, 5)),
    outcome(lambda: world.Delete_attr(MPI.TAG_UB)),
    outcome(lambda: world.Get_attr(MPI.KEYVAL_INVALID)),
    outcome(lambda: comm.Delete_attr(kv_copy)),
    outcome(lambda: MPI.Win.Free_keyval(kv_copy)),
    outcome(lambda: MPI.DOUBLE.Get_attr(kv_copy)),
    outcome(lambda: MPI.Comm.Free_keyval(kv_none)),
    deleted,
]
comm.Free()
out["memory"] = [
    len(MPI.Alloc_mem(24)),
    MPI.Alloc_mem(8).format,
    MPI.Aint_add(100, 28),
    MPI.Aint_diff(100, 28),
    MPI.Get_address(MPI.BOTTOM),
    MPI.Get_address(None),
    repr(MPI.BOTTOM),
    repr(MPI.IN_PLACE),
    repr(MPI.BUFFER_AUTOMATIC),
    int(MPI.IN_PLACE),
    MPI.buffer(b"abc")[1],
    MPI.buffer(b"abc").readonly,
    outcome(MPI.Get_hw_resource_info),
    outcome(MPI.Session.Init),
    MPI.Get_abi_version(),
    MPI.Get_abi_info().items(),
]
print(json.dumps(out, sort_keys=True))
