"""``pipeline()`` on the pipelining tutorial's Transformer shape (pytorch/tutorials
``intermediate_source/pipelining_tutorial.rst``): each decoder layer is called as
``layer(h, h)`` (the running tensor as target and memory) and the model returns
``self.output(h).clone()``. shardflow's recorded-chain splitter refused both (one tensor
argument per call, the last call's output object returned); torch's tracer splits them.
Single process: the stage modules of the split, run one after the other, against torch's
``pipe.get_stage_module(i)`` from the same seed -- the output, and every stage parameter's
name and gradient."""

import numpy as np
import pytest
import torch

import shardflow
from shardflow.distributed.pipelining import SplitPoint as SfSplitPoint
from shardflow.distributed.pipelining import pipeline as sf_pipeline


def _model_class(lib, tail="clone", second_arg="h"):
    nn = lib.nn

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(10, 8)
            self.layers = nn.ModuleDict({str(i): nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
                                         for i in range(4)})
            self.output = nn.Linear(8, 10)

        def forward(self, tokens):
            h = self.tok(tokens)
            for layer in self.layers.values():
                h = layer(h, h if second_arg == "h" else h * 1.0)
            out = self.output(h)
            return out.clone() if tail == "clone" else out * 2

    return Tiny


def _split_and_run(lib, pipeline, split_point, **kw):
    lib.manual_seed(0)
    model = _model_class(lib, **kw)()
    x = lib.randint(0, 10, (3, 5))
    pipe = pipeline(model, (x,), split_spec={"layers.2": split_point.BEGINNING})
    stages = [pipe.get_stage_module(i) for i in range(pipe.num_stages)]
    out = stages[1](stages[0](x))
    out.square().sum().backward()
    grads = [{n: p.grad.numpy().copy() for n, p in s.named_parameters()} for s in stages]
    return pipe.num_stages, out.detach().numpy(), grads


def test_pipeline_splits_layer_h_h_and_clone_like_torch():
    from torch.distributed.pipelining import SplitPoint, pipeline

    th_n, th_out, th_grads = _split_and_run(torch, pipeline, SplitPoint)
    sf_n, sf_out, sf_grads = _split_and_run(shardflow, sf_pipeline, SfSplitPoint)
    assert sf_n == th_n == 2
    np.testing.assert_allclose(sf_out, th_out, rtol=1e-5, atol=1e-6)
    for i, (th, sf) in enumerate(zip(th_grads, sf_grads, strict=True)):
        assert sorted(sf) == sorted(th), (i, sorted(sf), sorted(th))
        for name, g in th.items():
            np.testing.assert_allclose(sf[name], g, rtol=1e-4, atol=1e-6, err_msg=f"stage {i}: {name}")


@pytest.mark.parametrize("kw, what", [
    ({"tail": "double"}, "computes on the output of 'output'"),
    ({"second_arg": "h*1"}, "'layers.0' takes 2 positional argument(s) that are not all one tensor"),
])
def test_pipeline_still_refuses_computation_outside_the_chain(kw, what):
    """What the recorded chain cannot express (torch's tracer can): a computed output, a call
    given two different tensors. Refused with the fix, not split wrongly."""
    with pytest.raises(ValueError, match="PipelineStage\\(submodule") as err:
        _split_and_run(shardflow, sf_pipeline, SfSplitPoint, **kw)
    assert what in str(err.value)
