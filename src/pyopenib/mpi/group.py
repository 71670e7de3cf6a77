"""``MPI.Group``: ordered sets of processes, named by their ``COMM_WORLD`` ranks.

A ``Group`` object refers to a ``GroupHandle`` (what an ``MPI_Group`` handle points to):
the members' world ranks in group order. As in Open MPI, every constructor that yields no
member returns the ``GROUP_EMPTY`` handle itself, and ``Comm.Get_group`` returns the
communicator's own group handle each time, so handle equality (``==``) behaves as it does
over real Open MPI + mpi4py. Groups are local objects: no call here communicates.
"""

from __future__ import annotations

from . import context
from .error_classes import ERROR_CLASSES, Exception
from .handles import HandleObject, MpiObject
from .status import PROC_NULL, UNDEFINED

__all__ = [
    "CONGRUENT",
    "GROUP_EMPTY",
    "GROUP_NULL",
    "Group",
    "GroupHandle",
    "IDENT",
    "SIMILAR",
    "UNEQUAL",
    "compare_members",
]

IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
"""Results of ``Group.Compare`` / ``Comm.Compare`` (Open MPI's values)."""

_ERR_GROUP = ERROR_CLASSES["ERR_GROUP"][0]
_ERR_RANK = ERROR_CLASSES["ERR_RANK"][0]
_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]


class GroupHandle(MpiObject):
    """The members of a group (world ranks, in group order)."""

    __slots__ = ("members", "_index")

    def __init__(self, members):
        super().__init__()
        self.members = tuple(members)
        self._index = {w: i for i, w in enumerate(self.members)}

    def rank_of(self, world_rank: int) -> int:
        return self._index.get(world_rank, UNDEFINED)

    def __contains__(self, world_rank: int) -> bool:
        return world_rank in self._index


_EMPTY = GroupHandle(())


def _handle(members) -> GroupHandle:
    members = tuple(members)
    return GroupHandle(members) if members else _EMPTY


def compare_members(a, b) -> int:
    """IDENT for the same members in the same order, SIMILAR in another order."""
    a, b = tuple(a), tuple(b)
    if a == b:
        return IDENT
    if len(a) == len(b) and set(a) == set(b):
        return SIMILAR
    return UNEQUAL


class Group(HandleObject):
    """Group of processes."""

    __slots__ = ()
    __module__ = "mpi4py.MPI"  # pickle finds GROUP_EMPTY/GROUP_NULL as ``mpi4py.MPI.<NAME>``
    _constants: dict = {}
    _null_name = "GROUP_NULL"
    _first_fint = 2

    @classmethod
    def _of(cls, handle: GroupHandle | None) -> Group:
        return cls._wrap(handle)

    def _members(self) -> tuple:
        if self._obj is None:
            raise Exception(_ERR_GROUP)
        return self._obj.members

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Group {list(self._obj.members) if self._obj else 'NULL'}>"

    # -- accessors ----------------------------------------------------------------------
    def Get_size(self) -> int:
        """Return the number of processes in the group."""
        return len(self._members())

    @property
    def size(self) -> int:
        return self.Get_size()

    def Get_rank(self) -> int:
        """Return the rank of this process in the group (``UNDEFINED`` if not in it)."""
        members = self._members()
        if not members:
            return UNDEFINED
        return self._obj.rank_of(context.current().rank)

    @property
    def rank(self) -> int:
        return self.Get_rank()

    def Translate_ranks(self, ranks=None, group: Group | None = None) -> list[int]:
        """Translate ranks of this group to ranks of ``group`` (default: COMM_WORLD's).

        UNDEFINED for a process not in it, or for a rank past this group's end, and for
        every rank when ``group`` is empty; PROC_NULL stays PROC_NULL (Open MPI 4.1; a
        negative rank, on which Open MPI crashes, is MPI_ERR_RANK)."""
        members = self._members()
        if ranks is None:
            ranks = range(len(members))
        other = group._obj if group is not None else None
        if group is not None and other is None:
            raise Exception(_ERR_GROUP)
        out = []
        for r in ranks:
            r = int(r)
            if other is _EMPTY:
                out.append(UNDEFINED)
            elif r == PROC_NULL:
                out.append(PROC_NULL)
            elif r < 0:
                raise Exception(_ERR_RANK)
            elif r >= len(members):
                out.append(UNDEFINED)
            else:
                w = members[r]
                out.append(w if other is None else other.rank_of(w))
        return out

    def Compare(self, group: Group) -> int:
        """Compare two groups: ``IDENT``, ``SIMILAR`` or ``UNEQUAL``."""
        return compare_members(self._members(), group._members())

    # -- constructors -------------------------------------------------------------------
    def Dup(self) -> Group:
        """Duplicate the group."""
        return type(self)._of(_handle(self._members()))

    @classmethod
    def Union(cls, group1: Group, group2: Group) -> Group:
        """Create the union of two groups."""
        a, b = group1._members(), group2._members()
        seen = set(a)
        return cls._of(_handle(a + tuple(w for w in b if w not in seen)))

    @classmethod
    def Intersection(cls, group1: Group, group2: Group) -> Group:
        """Create the intersection of two groups."""
        b = set(group2._members())
        return cls._of(_handle(w for w in group1._members() if w in b))

    Intersect = Intersection

    @classmethod
    def Difference(cls, group1: Group, group2: Group) -> Group:
        """Create the difference of two groups."""
        b = set(group2._members())
        return cls._of(_handle(w for w in group1._members() if w not in b))

    def _check_ranks(self, ranks) -> list[int]:
        """Check ``ranks`` as Open MPI 4.1 does for ``Incl``/``Excl``.

        They must be in range and no more than the group's size (MPI_ERR_RANK); a rank
        named twice is accepted (Incl repeats the process, Excl excludes it once)."""
        n = len(self._members())
        ranks = [int(r) for r in ranks]
        if len(ranks) > n or any(not 0 <= r < n for r in ranks):
            raise Exception(_ERR_RANK)
        return ranks

    def Incl(self, ranks) -> Group:
        """Create a group of the processes at ``ranks`` of this one."""
        members = self._members()
        return type(self)._of(_handle(members[r] for r in self._check_ranks(ranks)))

    def Excl(self, ranks) -> Group:
        """Create a group of the processes not at ``ranks`` of this one."""
        drop = set(self._check_ranks(ranks))
        return type(self)._of(_handle(w for i, w in enumerate(self._members()) if i not in drop))

    def _expand(self, ranges) -> list[int]:
        n = len(self._members())
        out: list[int] = []
        for first, last, stride in ranges:
            first, last, stride = int(first), int(last), int(stride)
            if stride == 0:
                raise Exception(_ERR_RANK)  # Open MPI's class for it
            if not (0 <= first < n and 0 <= last < n):
                raise Exception(_ERR_RANK)
            if (last - first) * stride < 0:
                raise Exception(_ERR_RANK)
            out.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return self._check_ranks(out)

    def Range_incl(self, ranks) -> Group:
        """Create a group of the processes in ranges of ranks of this one."""
        return self.Incl(self._expand(ranks))

    def Range_excl(self, ranks) -> Group:
        """Create a group of the processes outside ranges of ranks of this one."""
        return self.Excl(self._expand(ranks))

    @classmethod
    def Create_from_session_pset(cls, session, pset_name: str) -> Group:
        """The two process sets every MPI-4 session has: ``mpi://WORLD`` and ``mpi://SELF``."""
        ctx = context.current()
        if pset_name == "mpi://WORLD":
            return cls._of(_handle(range(ctx.size)))
        if pset_name == "mpi://SELF":
            return cls._of(_handle((ctx.rank,)))
        raise Exception(_ERR_ARG)

    # -- destructor ---------------------------------------------------------------------
    def Free(self) -> None:
        """Free the group (this object becomes ``GROUP_NULL``)."""
        if self._obj is None or self._is_constant():
            raise Exception(_ERR_GROUP)
        self._obj = None


GROUP_NULL = Group._predefine("GROUP_NULL", None)
GROUP_EMPTY = Group._predefine("GROUP_EMPTY", _EMPTY, fint=1)


def group_of(members) -> Group:
    """A group of these world ranks (GROUP_EMPTY's handle when there are none)."""
    return Group._of(_handle(members))


NAMES = {
    "Group": Group,
    "GROUP_NULL": GROUP_NULL,
    "GROUP_EMPTY": GROUP_EMPTY,
    "IDENT": IDENT,
    "CONGRUENT": CONGRUENT,
    "SIMILAR": SIMILAR,
    "UNEQUAL": UNEQUAL,
}
"""What ``mpi4py.MPI`` exports from here."""
