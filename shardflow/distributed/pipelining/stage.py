"""``PipelineStage``: one stage's module, its place in the pipeline, and its transfers.

A stage with index ``s`` of ``num_stages`` runs on rank ``s % group.size`` of the pipeline
group (one stage per rank; with ``ScheduleInterleaved1F1B`` each rank holds several,
``s = v * group.size + r``). Per micro-batch ``mb`` it keeps the input it received (a leaf
that requires grad) and the output its module produced, until that micro-batch's backward.

Communication plan (``shardflow.comm`` checked point-to-point on the pipeline group, posted by
the schedule, ``schedules.py``; the stage makes the messages and receive buffers):

* forward: stage ``s`` sends its output to stage ``s+1`` as a 10-element int64 header
  (ndim, up to 8 dims, dtype code) then the data (tags ``3*(s+1)`` and ``3*(s+1)+1``);
  the receiver allocates from the header, so stage outputs may have any shape;
* backward: stage ``s+1`` sends ``d loss / d input`` to stage ``s`` (tag ``3*s+2``); its shape
  is the one stage ``s`` sent, so no header.

The header is a small host (NumPy) array: on an NCCL communicator it goes over the control
(MPI) path. Activations and gradients stay on the stage's device: a GPU stage sends its
device arrays and receives into buffers allocated on its device (the device of its
module's parameters), so they travel by NCCL's send/recv, never through host memory.

With ``tp_mesh`` (tensor parallelism inside the stage, parameters laid out by
``tp_layout.lay_out_stage``): every TP rank of the stage receives the whole activation from the
same-TP-index rank of the previous stage (the pipeline group is a line of the mesh along
"pp"), makes it a ``Broadcast`` global tensor on ``tp_mesh``, runs the module on global
tensors and sends its output whole (``full_tensor``: a ``Partial`` output is all-reduced over
``tp_mesh`` first, the all-reduce the next layer would have done). Backward mirrors it: the
received gradient is whole, and the gradient of the ``Broadcast`` input is whole too (the
column-parallel layers' ``BroadcastUse`` all-reduces it), so what is sent back is whole.

The transfers of one step of the schedule's timeline (this rank's send and the receives of
what its neighbours produce at that step) are one ``batch_p2p`` (``batch_isend_irecv``): on
NCCL one ``groupStart``/``groupEnd``, since NCCL's send/recv are in order on the stream and a
send may wait until its receive is posted (see ``schedules.py``).
"""

from __future__ import annotations

import time

import numpy as np

from ... import comm as _comm
from ...autograd.tensor import Tensor
from ...backend import device as _device
from ...backend.xp import CPU, device_of, get_array_module, new_array

__all__ = ["PipelineStage"]

_DTYPES = ["float32", "float64", "float16", "int64", "int32", "bool", "uint8", "int8"]
_MAX_DIMS = 8


def _dtype_code(dt) -> int:
    name = np.dtype(dt).name
    if name not in _DTYPES:
        raise TypeError(f"pipeline stage output dtype {name} is not sendable; expected one of {_DTYPES}")
    return _DTYPES.index(name)


def _debug_info(v) -> str:
    """torch's ``friendly_debug_info`` of a stage input (its failed-forward message)."""
    if isinstance(v, Tensor):
        return f"Tensor({v.shape}, grad={v.requires_grad}, dtype={v.dtype})"
    return str(v)


def _nbytes(t) -> int:
    return int(t.array.nbytes) if isinstance(t, Tensor) else 0


class PipelineStage:
    """PyTorch's ``PipelineStage(submodule, stage_index, num_stages, device, group)``.

    ``group`` is the pipeline communicator (``new_group`` of the ranks of one pipeline;
    default the world). ``tied`` (from :class:`~.split.Pipe`) lists the parameters shared
    with another stage; ``dp_group``, when given, averages the gradients over the data
    parallel replicas of this stage after the last backward (one all-reduce per parameter).
    ``tp_mesh``, when given, is the stage's tensor-parallel sub-mesh (module docstring).
    ``device`` (default: the device of ``submodule``'s parameters) is where the first stage's
    input chunks are moved and the activations and gradients received are allocated.
    PyTorch's ``input_args`` / ``output_args`` (example tensors for shape inference) and its
    other keyword arguments are accepted and unused: every activation travels with a header
    that gives its shape and dtype.
    """

    def __init__(self, submodule, stage_index: int, num_stages: int, device=None, group=None,
                 *, tied=None, dp_group=None, tp_mesh=None, input_args=None, output_args=None,
                 output_grads=None, input_grads=None, dw_builder=None, get_mesh=None):
        self.submod = submodule
        self.group = group if group is not None else _comm.get_world()
        self.stage_index = int(stage_index)
        self.num_stages = int(num_stages)
        if not 0 <= self.stage_index < self.num_stages:
            raise ValueError(f"stage_index {stage_index} outside 0 .. {num_stages - 1}")
        if self.num_stages % self.group.size:
            raise ValueError(
                f"num_stages ({num_stages}) must be a multiple of the pipeline group's size "
                f"({self.group.size}): each rank holds num_stages / size stages"
            )
        if self.stage_index % self.group.size != self.group.rank:
            raise ValueError(
                f"stage {stage_index} belongs on pipeline rank {self.stage_index % self.group.size}, "
                f"but it was built on pipeline rank {self.group.rank}; build stage "
                f"s = v * {self.group.size} + {self.group.rank} on this rank"
            )
        # where received activations and gradients are allocated (a GPU stage receives into
        # device buffers, over NCCL): ``device``, by default its module's parameters' device
        first = next(iter(submodule.parameters()), None)
        self.device = (_device(device) if device is not None else
                       device_of(first.array) if first is not None else CPU)
        self.tied = list(tied or [])
        self.dp_group = dp_group
        self.tp_mesh = tp_mesh
        self._inputs: dict = {}
        self._outputs: dict = {}
        self.live_bytes = 0  # bytes of inputs + outputs held for pending backwards
        self.peak_live_bytes = 0
        self.peak_inflight = 0  # micro-batches whose backward has not run yet
        self.last_compute = 0.0  # seconds of the last forward_one / backward_one's compute

    @property
    def is_first(self) -> bool:
        return self.stage_index == 0

    @property
    def is_last(self) -> bool:
        return self.stage_index == self.num_stages - 1

    def _peer(self, stage: int) -> int:
        return stage % self.group.size

    # ------------------------------------------------------------------ transfers
    # The schedule posts the transfers (one batch of sends and receives per step of its
    # timeline, ``schedules.py``); the stage makes the messages and the receive buffers.
    @staticmethod
    def activation_tags(stage: int) -> tuple:
        """(header tag, data tag) of the activation that ``stage`` receives."""
        return 3 * stage, 3 * stage + 1

    @staticmethod
    def grad_tag(stage: int) -> int:
        """Tag of the gradient that ``stage`` receives (d loss / d its output)."""
        return 3 * stage + 2

    def activation_message(self, out: Tensor) -> tuple:
        """(header, data) of this stage's output for the next stage: the header is a small
        host array (shape and dtype), the data stays on the output's device."""
        arr = get_array_module(out.array).ascontiguousarray(out.array)
        if arr.ndim > _MAX_DIMS:
            raise ValueError(f"stage output has {arr.ndim} dims; at most {_MAX_DIMS} can be sent")
        hdr = np.zeros(_MAX_DIMS + 2, dtype=np.int64)
        hdr[0] = arr.ndim
        hdr[1:1 + arr.ndim] = arr.shape
        hdr[-1] = _dtype_code(arr.dtype)
        return hdr, arr

    @staticmethod
    def header_buffer():
        return np.zeros(_MAX_DIMS + 2, dtype=np.int64)

    def activation_buffer(self, hdr):
        """A buffer on this stage's device for the activation ``hdr`` announces."""
        ndim = int(hdr[0])
        shape = tuple(int(d) for d in hdr[1:1 + ndim])
        dt = _DTYPES[int(hdr[-1])]
        return new_array(self.device, lambda xp: xp.empty(shape, dtype=dt))

    def grad_buffer(self, mb: int):
        """A buffer for the gradient of micro-batch ``mb``'s output: its shape, dtype, device."""
        a = self._outputs[mb].array
        return new_array(device_of(a), lambda xp: xp.empty(a.shape, dtype=a.dtype))

    @staticmethod
    def as_input(arr) -> Tensor:
        """A received activation as this stage's input: a leaf that requires grad."""
        return Tensor(arr, requires_grad=arr.dtype.kind == "f")

    # ------------------------------------------------------------------ compute
    def forward_one(self, mb: int, x) -> Tensor:
        """Forward of micro-batch ``mb`` on ``x`` (the first stage's input chunk, else the
        activation received from the previous stage). Returns the output, kept with ``x``
        until the micro-batch's backward; the schedule sends it on."""
        if self.is_first and isinstance(x, Tensor):
            x = x.to(self.device)  # the caller's input chunk, on this stage's device
        t0 = time.perf_counter()
        try:
            out = self._run(x)
        except Exception as e:  # torch's wrapping: programs catch RuntimeError around step()
            raise RuntimeError(f"[Stage {self.stage_index}] failed to run forward:\n"
                               f"args: {(_debug_info(x),)}\nkwargs: {{}}\n"
                               f"(micro-batch {mb}; the module's own error is above)") from e
        self.last_compute = time.perf_counter() - t0
        self._inputs[mb] = x
        self._outputs[mb] = out
        self.live_bytes += _nbytes(out) + (0 if self.is_first else _nbytes(x))
        self.peak_live_bytes = max(self.peak_live_bytes, self.live_bytes)
        self.peak_inflight = max(self.peak_inflight, len(self._outputs))
        return out

    def _run(self, x):
        if self.tp_mesh is None:
            return self.submod(x)
        from ..global_tensor import from_local, full_tensor
        from ..sbp import broadcast

        xg = from_local(x, self.tp_mesh, (broadcast,)) if x._spec is None else x
        return full_tensor(self.submod(xg))  # whole on every TP rank, differentiable

    def backward_one(self, mb: int, loss=None, grad=None):
        """Backward of micro-batch ``mb``: from ``loss`` on the last stage, else from ``grad``
        (the array the next stage sent). Returns ``d loss / d input`` for the previous stage
        (None on the first stage)."""
        x, out = self._inputs.pop(mb), self._outputs.pop(mb)
        self.live_bytes -= _nbytes(out) + (0 if self.is_first else _nbytes(x))
        t0 = time.perf_counter()
        if self.is_last:
            loss.backward()
        else:
            out.backward(Tensor(grad))
        self.last_compute = time.perf_counter() - t0
        if self.is_first:
            return None
        g = x.grad.array if x.grad is not None else get_array_module(x.array).zeros_like(x.array)
        return get_array_module(g).ascontiguousarray(g)

    def scale_grads(self, factor: float) -> None:
        for p in self.submod.parameters():
            if p.grad is not None:
                p.grad.array /= factor

    def clear_runtime_states(self) -> None:
        self._inputs.clear()
        self._outputs.clear()
        self.live_bytes = 0
