"""``placement``: a mesh of ranks (OneFlow's name; PyTorch calls it ``DeviceMesh``).

``placement("cpu", [0, 1, 2, 3])`` is a 1-D mesh; ``placement("cpu", [[0, 1], [2, 3]])``
a 2x2 mesh whose dimension 0 runs down the columns (ranks 0 and 2 share mesh coordinate
(*, 0)). A global tensor puts one sbp on each mesh dimension.

Communication plan: each mesh dimension ``k`` has a communicator over the ranks that share
every other coordinate with this rank (for the 2x2 mesh: dimension 0 of rank 1 is
``[1, 3]``, dimension 1 is ``[0, 1]``). They are made on first use with
``Communicator.new_group``, which every rank of the world calls for every group of that
dimension in the same order (so first use must happen on all ranks, as it does in SPMD
code), and cached per (mesh, dimension).

A placement built with ``placement(...)`` covers every rank of the world; on a "cuda"
placement the shards are device arrays (creation ops make them on the current device) and
boxing moves them through the world's communicator (NCCL under ``init_process_group("nccl")``). A sub-mesh ``mesh["tp"]`` leaves ranks out: it
holds the ranks of one line of ``mesh`` and uses that mesh dimension's communicator, so
global tensors on it involve only those ranks (a pipeline stage's tensor-parallel ranks,
``pipelining/mesh.py``). When only some ranks will use a sub-mesh, make the parent mesh's
communicators first on every rank (``mesh.create_groups()``), since ``new_group`` is
collective over the world. A placement is a value: two placements with the same type and
ranks compare equal and share their communicators.

Making a placement turns the global route on (``route.enable()``: ops on global tensors go
through the sbp rules from then on; idempotent). This module is the top of the global-tensor
core: the modules below read a placement's attributes and never import it.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import comm as _comm
from . import route

__all__ = ["placement", "DeviceMesh", "init_device_mesh"]

# (type, ranks, shape, mesh dim) -> (the world it was made in, Communicator); an entry of an
# earlier world (destroy_process_group, then init again) is made again
_GROUPS: dict[tuple, tuple] = {}


class placement:  # noqa: N801 - OneFlow's name
    """A device mesh: ``type`` ("cpu" or "cuda") and an N-d array of ranks."""

    def __init__(self, type: str = "cpu", ranks=None, *, mesh_dim_names=None, device_type=None,
                 mesh=None, backend_override=None, _init_backend: bool = True):
        # torch's DeviceMesh(device_type, mesh) keywords name the same two things
        if device_type is not None:
            type = device_type
        if mesh is not None:
            if ranks is not None:
                raise ValueError("DeviceMesh: pass the ranks once, as mesh= (torch) or ranks=")
            ranks = mesh.tolist() if hasattr(mesh, "tolist") else mesh
        _refuse_backend_override(backend_override, "DeviceMesh")
        if type not in ("cpu", "cuda"):
            raise ValueError(f"placement type must be 'cpu' or 'cuda', got {type!r}")
        world = _comm.get_world()
        if ranks is None:
            ranks = list(range(world.size))
        arr = np.asarray(ranks)
        if arr.dtype.kind not in "iu" or arr.ndim == 0 or arr.size == 0:
            raise ValueError(
                f"placement ranks must be a non-empty (nested) list of ints, got {ranks!r}"
            )
        flat = sorted(int(r) for r in arr.reshape(-1))
        if len(set(flat)) != len(flat):
            raise ValueError(f"placement ranks must be distinct, got {arr.tolist()}")
        if flat != list(range(world.size)):
            raise NotImplementedError(
                f"placement ranks {arr.tolist()} must cover every rank of the world "
                f"(0 .. {world.size - 1}) for now; this job has {world.size} rank(s). "
                f"Start it with `shardflow run -n {len(flat)} ...` or list all ranks"
            )
        for k in range(arr.ndim):
            if arr.shape[k] > 1 and not np.all(np.diff(arr, axis=k) > 0):
                raise NotImplementedError(
                    f"placement ranks {arr.tolist()}: list the ranks of every mesh dimension in "
                    "increasing order (e.g. [[0, 1], [2, 3]])"
                )
        self.type = type
        self.ranks = arr.astype(np.int64)
        self.ranks.setflags(write=False)
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != self.ranks.ndim:
                raise ValueError(
                    f"mesh_dim_names {mesh_dim_names} must name each of the {self.ranks.ndim} "
                    "mesh dimensions"
                )
        self.mesh_dim_names = mesh_dim_names
        self._rank = world.rank
        coord = np.argwhere(self.ranks == self._rank)
        self.coordinate = tuple(int(c) for c in coord[0])
        # The first placement turns the global route on (why here: route.py's docstring).
        route.enable()

    # ---- value semantics
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.ranks.shape)

    hierarchy = shape  # OneFlow's name

    @property
    def ndim(self) -> int:
        return self.ranks.ndim

    def size(self, dim: int | None = None) -> int:
        return int(self.ranks.size) if dim is None else int(self.ranks.shape[dim])

    def _key(self):
        return (self.type, tuple(self.ranks.reshape(-1).tolist()), self.shape)

    def __eq__(self, other):
        return isinstance(other, placement) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self) -> str:
        if getattr(self, "_torch_repr", False):
            return self._device_mesh_repr()
        return f"placement(type={self.type!r}, ranks={self.ranks.tolist()})"

    def _device_mesh_repr(self) -> str:
        """PyTorch's ``DeviceMesh`` repr, for a mesh made by ``init_device_mesh`` (and its
        sub-meshes), which programs print (``f"{device_mesh=}"``): the sizes (named when the
        dimensions are), the device type and each dimension's stride in global ranks (``()``
        for a dimension of size 1, as PyTorch's layout drops those)."""
        shape = self.shape
        sizes = (f"({', '.join(f'{k}={v}' for k, v in zip(self.mesh_dim_names, shape))})"
                 if self.mesh_dim_names else f"{shape}")
        stride = tuple(
            () if n == 1 else int(np.take(self.ranks, 1, axis=k).flat[0] - self.ranks.flat[0])
            for k, n in enumerate(shape)
        )
        return f"DeviceMesh({sizes}, '{self.type}', stride={stride})"

    # ---- communication
    def group(self, dim: int):
        """The communicator over mesh dimension ``dim`` that contains this rank."""
        parent = getattr(self, "_parent", None)
        if parent is not None:  # a sub-mesh of a larger mesh: that mesh's dimension
            return parent[0].group(parent[1])
        key = (*self._key(), dim)
        world = _comm.get_world()
        hit = _GROUPS.get(key)
        if hit is not None and hit[0] is world:
            return hit[1]
        if self.ranks.ndim == 1:
            g = world  # a 1-D mesh covers the world in rank order (checked in __init__)
        else:
            # Every rank calls new_group for every group of this mesh dimension, in order.
            others = [range(s) for i, s in enumerate(self.shape) if i != dim]
            for rest in itertools.product(*others):
                index = list(rest)
                index.insert(dim, slice(None))
                members = self.ranks[tuple(index)].tolist()
                sub = world.new_group(members)
                if self._rank in members:
                    g = sub
        _GROUPS[key] = (world, g)
        return g

    def create_groups(self) -> placement:
        """Make the communicator of every mesh dimension now (collective: every rank of the
        world calls it), so that later use by a subset of ranks (one pipeline stage's
        sub-mesh) creates nothing."""
        for k in range(self.ndim):
            self.group(k)
        return self

    def index(self, dim: int) -> int:
        """This rank's coordinate along mesh dimension ``dim``."""
        return self.coordinate[dim]

    # ---- PyTorch DeviceMesh names
    @property
    def device_type(self) -> str:
        return self.type

    @property
    def mesh(self):
        return self.ranks

    def get_coordinate(self):
        """This rank's mesh coordinate (a tuple, as PyTorch 2.13 returns)."""
        return tuple(self.coordinate)

    def get_group(self, mesh_dim: int | str | None = None):
        """The process group (communicator) of mesh dimension ``mesh_dim`` (an index or a
        name) that contains this rank; usable as ``group=`` of ``dist`` collectives."""
        return self.group(self._dim(self._one_dim(mesh_dim, "get_group")))

    def get_all_groups(self) -> list:
        return [self.group(k) for k in range(self.ndim)]

    def get_rank(self) -> int:
        """This process's global rank (PyTorch's ``DeviceMesh.get_rank``)."""
        return self._rank

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's coordinate along ``mesh_dim`` (its rank in that dimension's group)."""
        return self.coordinate[self._dim(self._one_dim(mesh_dim, "get_local_rank"))]

    def _one_dim(self, mesh_dim, what: str):
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError(
                    f"{what}: optional kwarg `mesh_dim` needs to be specified when "
                    f"device_mesh.ndim > 1 (this mesh has {self.ndim} dimensions, named "
                    f"{self.mesh_dim_names})"
                )
            return 0
        return mesh_dim

    def _dim(self, mesh_dim) -> int:
        if isinstance(mesh_dim, str):
            if not self.mesh_dim_names or mesh_dim not in self.mesh_dim_names:
                raise KeyError(
                    f"mesh dimension {mesh_dim!r} not found; this mesh's dimensions are "
                    f"{self.mesh_dim_names}"
                )
            return self.mesh_dim_names.index(mesh_dim)
        return int(mesh_dim)

    def __getitem__(self, name):
        """``mesh["tp"]``: the 1-D sub-mesh along that dimension that contains this rank.
        ``mesh["dp", "tp"]`` (every dimension, in order) is the mesh itself; other
        multi-dimension slices are not supported."""
        if isinstance(name, tuple | list):
            names = tuple(name)
            if len(names) == 1:
                return self[names[0]]
            if [self._dim(n) for n in names] == list(range(self.ndim)):
                return self
            raise NotImplementedError(
                f"slicing mesh dimensions {names} out of a mesh with dimensions "
                f"{self.mesh_dim_names} is not supported; slice one dimension (mesh['tp']) "
                "or all of them in order"
            )
        if self.ndim == 1 and self.mesh_dim_names is not None and name == self.mesh_dim_names[0]:
            return self
        dim = self._dim(name)
        index = list(self.coordinate)
        index[dim] = slice(None)
        sub = object.__new__(type(self))
        sub.type = self.type
        sub.ranks = self.ranks[tuple(index)].copy()
        sub.ranks.setflags(write=False)
        sub.mesh_dim_names = None if self.mesh_dim_names is None else (self.mesh_dim_names[dim],)
        sub._rank = self._rank
        sub.coordinate = (self.coordinate[dim],)
        sub._parent = (self, dim)
        sub._torch_repr = getattr(self, "_torch_repr", False)
        return sub


DeviceMesh = placement


def _refuse_backend_override(backend_override, where: str) -> None:
    """torch's ``backend_override`` (another backend per mesh dimension): None only here, where
    every dimension's groups use the job's one backend (MPI, or NCCL on GPUs)."""
    if backend_override:
        raise NotImplementedError(
            f"{where}(backend_override={backend_override!r}): every mesh dimension uses the job's "
            "backend here (MPI on CPU, NCCL on GPU); drop backend_override")


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None,
                     backend_override=None) -> placement:
    """PyTorch's ``init_device_mesh``: ranks 0..N-1 laid out row-major in ``mesh_shape``."""
    _refuse_backend_override(backend_override, "init_device_mesh")
    world = _comm.get_world()
    shape = tuple(int(s) for s in mesh_shape)
    total = int(np.prod(shape))
    if total != world.size:
        raise ValueError(
            f"mesh_shape {shape} holds {total} ranks but the job has {world.size}; start it "
            f"with `shardflow run -n {total} ...` or pick a shape whose product is {world.size}"
        )
    mesh = placement(device_type, np.arange(total).reshape(shape).tolist(),
                     mesh_dim_names=mesh_dim_names)
    mesh._torch_repr = True  # printed as PyTorch prints a DeviceMesh (see _device_mesh_repr)
    return mesh
