"""``SummaryWriter.add_graph``'s graph: the model run once on the example input with every
op call recorded, as TensorBoard's ``GraphDef``.

torch traces the model with ``torch.jit.trace`` and writes the TorchScript graph. shardflow
has no TorchScript; it records the same run concretely instead: each registered op called
during one ``model(*inputs)`` (under ``no_grad``) is a node named by the module scope it ran
in, as torch names its nodes (``Net/Conv2d[conv1]/conv2d.0``), with op ``aten::<name>``,
its input edges (the nodes that made its tensor arguments; parameters, which torch shows as
``prim::GetAttr`` nodes, are left out) and ``_output_shapes``; the inputs and outputs are
``IO Node``s named ``input/input.<k>`` / ``output/output.<k>``, as torch's. Data-dependent
Python control flow is followed for the example input, as with torch's tracer. torch also
writes a ``RunMetadata`` "profiler" record of the traced run; this graph has none.
"""

from __future__ import annotations

import itertools

from ...autograd import Tensor, dispatch, no_grad


def _tensors(value):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _node(name, op, inputs, shapes):
    from tensorboardX.proto.attr_value_pb2 import AttrValue
    from tensorboardX.proto.node_def_pb2 import NodeDef
    from tensorboardX.proto.tensor_shape_pb2 import TensorShapeProto

    shape_list = AttrValue.ListValue(shape=[
        TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in s]) for s in shapes])
    return NodeDef(name=name, op=op, input=list(inputs), attr={"_output_shapes": AttrValue(list=shape_list)})


def graph_def(model, input_to_model, use_strict_trace: bool = True):
    """The ``GraphDef`` of one run of ``model`` on ``input_to_model`` (a tensor or a tuple /
    list of them). ``use_strict_trace=True`` refuses a model whose output is a list or a dict,
    as torch's strict tracer does."""
    from tensorboardX.proto.graph_pb2 import GraphDef
    from tensorboardX.proto.versions_pb2 import VersionDef

    if input_to_model is None:
        raise ValueError("add_graph(model, input_to_model): got input_to_model=None; pass an example "
                         "input (a tensor, or a tuple of tensors) to run the model on")
    inputs = tuple(input_to_model) if isinstance(input_to_model, list | tuple) else (input_to_model,)
    nodes, producer, keep = [], {}, []  # keep: the recorded tensors stay alive (ids stay unique)
    for k, t in enumerate(_tensors(inputs)):
        name = f"input/input.{k + 1}"
        nodes.append(_node(name, "IO Node", [], [tuple(t.shape)]))
        producer[id(t)] = name
        keep.append(t)
    scope, counter = [type(model).__name__], itertools.count()

    def enter(module, args, _label):
        scope.append(_label)  # (returns None: the hook leaves the input as it is)

    def leave(module, args, output):
        scope.pop()  # (returns None: the hook leaves the output as it is)

    handles = []
    for path, module in model.named_modules():
        if path:
            label = f"{type(module).__name__}[{path.rsplit('.', 1)[-1]}]"
            handles.append(module.register_forward_pre_hook(lambda m, a, _l=label: enter(m, a, _l)))
            handles.append(module.register_forward_hook(leave))

    def record(name, func, args, kwargs, nxt):
        out = nxt(name, func, args, kwargs)
        ins = [producer[id(t)] for t in _tensors((args, kwargs)) if id(t) in producer]
        outs = list(_tensors(out))
        node = f"{'/'.join(scope)}/{name}.{next(counter)}"
        nodes.append(_node(node, f"aten::{name}", dict.fromkeys(ins), [tuple(o.shape) for o in outs]))
        for o in outs:
            producer[id(o)] = node
            keep.append(o)
        return out

    previous = dispatch.set_trace_handler(record)
    try:
        with no_grad():
            out = model(*inputs)
    finally:
        dispatch.set_trace_handler(previous)
        for h in handles:
            h.remove()
    if use_strict_trace and isinstance(out, list | dict):
        raise RuntimeError(
            f"add_graph: the model returned a {type(out).__name__}; with use_strict_trace=True "
            "(torch's strict tracer) a mutable container output is refused. Return a tuple, or "
            "pass use_strict_trace=False to record it")
    for k, o in enumerate(_tensors(out)):
        nodes.append(_node(f"output/output.{k + 1}", "IO Node", [producer[id(o)]] if id(o) in producer else [],
                           [tuple(o.shape)]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
