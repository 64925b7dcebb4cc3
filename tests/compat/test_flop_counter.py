"""``torch.utils.flop_counter.FlopCounterMode``: the same counts, per op and per module, forward
and backward, as torch 2.13's counter on CPU (attention: torch's formulas, which torch's CPU
build does not apply), and torch's table."""

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
import torch.utils.flop_counter as tfc

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.utils.flop_counter import FlopCounterMode


def _counts(counter):
    return {mod: {str(k): v for k, v in ops.items()} for mod, ops in counter.get_flop_counts().items()}


def _both(run):
    """``run(lib, F)`` under each library's counter: (torch's counts, shardflow's counts)."""
    with tfc.FlopCounterMode(display=False) as t:
        run(torch, tF)
    with FlopCounterMode(display=False) as s:
        run(sf, F)
    return _counts(t), _counts(s)


def _pair(lib, *shapes, grads=()):
    rng = np.random.default_rng(0)
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=i in grads)
            for i, s in enumerate(shapes)]


class _Net:
    """The same conv + MLP module tree in both libraries (weights copied)."""

    @staticmethod
    def make(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = lib.nn.Conv2d(3, 4, 3, padding=1)
                self.seq = lib.nn.Sequential(lib.nn.Linear(4 * 5 * 5, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))

            def forward(self, x):
                return self.seq(self.conv(x).flatten(1))

        return Net()


@pytest.mark.parametrize("input_grad", [False, True])
def test_module_tree_counts_and_total_match_torch(input_grad):
    def run(lib, _):
        net = _Net.make(lib)
        (x,) = _pair(lib, (2, 3, 5, 5), grads=(0,) if input_grad else ())
        net(x).sum().backward()

    t, s = _both(run)
    assert s == t
    assert set(s) == {"Global", "Net", "Net.conv", "Net.seq", "Net.seq.0", "Net.seq.2"}
    assert sum(s["Global"].values()) == (42_192 if input_grad else 31_392)


@pytest.mark.parametrize("shape", [(8,), (5, 8), (2, 5, 8)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("contiguous", [True, False])
def test_linear_is_addmm_or_mm_as_in_torch(shape, bias, contiguous):
    def run(lib, F):
        x, w, b = _pair(lib, shape, (3, 8), (3,), grads=(0, 1, 2))
        if not contiguous and len(shape) == 3:
            x = x.transpose(0, 1).contiguous().transpose(0, 1)
        F.linear(x, w, b if bias else None).sum().backward()

    t, s = _both(run)
    assert s == t and s


@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
                                    ((4,), (4,)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((2, 3, 4), (1, 4, 5)), ((2, 3, 4), (4, 5))])
@pytest.mark.parametrize("grads", [(0, 1), (1,), ()])
def test_matmul_counts_match_torch(sa, sb, grads):
    def run(lib, _):
        a, b = _pair(lib, sa, sb, grads=grads)
        y = a @ b
        if y.requires_grad:
            y.sum().backward()

    t, s = _both(run)
    assert s == t


def test_mm_bmm_addmm_baddbmm_and_einsum_match_torch():
    def run(lib, _):
        a, b, c, d = _pair(lib, (2, 4), (4, 3), (2, 2, 4), (2, 4, 3), grads=(0, 3))
        lib.mm(a, b).sum().backward()
        lib.bmm(c, d).sum().backward()
        lib.addmm(lib.zeros(3), a, b, beta=0.5).sum().backward()
        lib.baddbmm(lib.zeros(3), c, d, alpha=2.0).sum().backward()
        lib.einsum("bij,bjk->bik", c, d).sum().backward()
        lib.einsum("i,i->", lib.ones(3), lib.ones(3))

    t, s = _both(run)
    assert s == t


@pytest.mark.parametrize("case", ["conv1d_groups", "conv2d_stride", "conv3d", "unbatched", "transpose2d",
                                  "transpose1d_groups"])
@pytest.mark.parametrize("grads", [(0, 1), (1,)])
def test_convolutions_match_torch(case, grads):
    shapes, kw, op = {  # (input, weight, bias) shapes
        "conv1d_groups": (((2, 4, 9), (6, 2, 3), (6,)), dict(groups=2, padding=1), "conv1d"),
        "conv2d_stride": (((2, 3, 7, 6), (4, 3, 3, 2), (4,)), dict(stride=2, dilation=1), "conv2d"),
        "conv3d": (((1, 2, 4, 4, 3), (3, 2, 2, 2, 2), (3,)), {}, "conv3d"),
        "unbatched": (((3, 5, 5), (4, 3, 3, 3), (4,)), dict(padding="same"), "conv2d"),
        "transpose2d": (((2, 3, 5, 5), (3, 4, 3, 3), (4,)), dict(stride=2, output_padding=1), "conv_transpose2d"),
        "transpose1d_groups": (((2, 4, 6), (4, 3, 3), (6,)), dict(groups=2), "conv_transpose1d"),
    }[case]

    def run(lib, F):
        x, w, b = _pair(lib, *shapes, grads=grads + (2,))
        getattr(F, op)(x, w, b, **kw).sum().backward()

    t, s = _both(run)
    assert s == t and s["Global"]


@pytest.mark.parametrize("shapes, dtype, mask", [
    (((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)), sf.float32, False),
    (((2, 4, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8)), sf.float32, True),  # GQA
    (((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 8)), sf.bfloat16, False),
])
def test_attention_uses_torchs_formulas(shapes, dtype, mask):
    q, k, v = (sf.randn(*s, dtype=dtype, requires_grad=True) for s in shapes)
    attn_mask = sf.ones(shapes[0][2], shapes[1][2], dtype=sf.bool) if mask else None
    with FlopCounterMode(display=False) as fc:
        F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, enable_gqa=shapes[0][1] != shapes[1][1]).sum().backward()
    kind = "flash" if dtype == sf.bfloat16 else "efficient"
    out_shape = (*shapes[0][:3], shapes[2][3])
    assert _counts(fc)["Global"] == {
        f"aten._scaled_dot_product_{kind}_attention": tfc.sdpa_flop_count(*shapes),
        f"aten._scaled_dot_product_{kind}_attention_backward": tfc.sdpa_backward_flop_count(out_shape, *shapes)}


def test_attention_inside_counted_nothing_twice_and_no_grad_has_no_backward():
    q = sf.randn(1, 2, 4, 8)
    with FlopCounterMode(display=False) as fc:
        F.scaled_dot_product_attention(q, q, q)
    assert list(_counts(fc)["Global"]) == ["aten._scaled_dot_product_efficient_attention"]  # its matmuls not added


def test_backward_outside_the_block_and_no_grad_forward_as_torch():
    def run(lib, _):
        with lib.no_grad():
            lib.nn.Linear(4, 4)(lib.randn(2, 4))
        run.y = lib.nn.Linear(4, 4)(lib.randn(2, 4))

    with FlopCounterMode(display=False) as fc:
        run(sf, F)
    run.y.sum().backward()  # after the block: not counted
    t, s = _both(run)
    run.y.sum().backward()
    assert s == t == _counts(fc) == {"Global": {"aten.addmm": 128}, "Linear": {"aten.addmm": 128}}


def test_table_is_torchs_table():
    torch_table = (
        "Module                          FLOP    % Total\n"
        "---------------------------  -------  ---------\n"
        "Net                          31.392K    100.00%\n"
        "- aten.convolution           10.800K     34.40%\n"
        "- aten.addmm                  3.264K     10.40%\n"
        "- aten.mm                     6.528K     20.80%\n"
        "- aten.convolution_backward  10.800K     34.40%\n"
        "Net.conv                     21.600K     68.81%\n"
        "- aten.convolution           10.800K     34.40%\n"
        "- aten.convolution_backward  10.800K     34.40%\n"
        "Net.seq                       9.792K     31.19%\n"
        "- aten.addmm                  3.264K     10.40%\n"
        "- aten.mm                     6.528K     20.80%")  # torch 2.13 with tabulate 0.10
    with FlopCounterMode(display=False) as fc:
        _Net.make(sf)(sf.randn(2, 3, 5, 5)).sum().backward()
    assert fc.get_table() == torch_table
    assert fc.get_table(1) == "\n".join(torch_table.splitlines()[:7])
    with FlopCounterMode(display=False) as fc:
        sf.randn(2, 3) @ sf.randn(3, 4)
    assert fc.get_table() == ("Module       FLOP    % Total\n---------  ------  ---------\n"
                              "Global         48    100.00%\n- aten.mm      48    100.00%")
    with FlopCounterMode(display=False) as fc:
        pass
    assert fc.get_table() == "Module      FLOP    % Total\n--------  ------  ---------\nGlobal         0         0%"


def test_display_prints_the_table_on_exit(capsys):
    with FlopCounterMode() as fc:
        sf.nn.Linear(3, 4)(sf.randn(2, 3))
    assert capsys.readouterr().out == fc.get_table() + "\n"
    assert fc.get_total_flops() == 48


def test_custom_mapping_and_register_flop_formula():
    def relu_flop(x_shape, out_shape=None):
        return int(np.prod(x_shape))

    with pytest.warns(UserWarning, match="mods argument is not needed"):
        fc = FlopCounterMode(sf.nn.Linear(2, 2), display=False, custom_mapping={sf.ops.aten.relu: relu_flop})
    with fc:
        sf.relu(sf.randn(3, 4))
    assert _counts(fc) == {"Global": {"aten.relu": 12}}
    with pytest.raises(RuntimeError, match="duplicate registrations"):
        sf.utils.flop_counter.register_flop_formula(sf.ops.aten.mm)(relu_flop)
    with pytest.raises(ValueError, match="expected each target to be a built-in operator"):
        sf.utils.flop_counter.register_flop_formula(3)(relu_flop)


def test_counter_leaves_the_dispatcher_as_it_found_it():
    from shardflow.autograd import dispatch

    with FlopCounterMode(display=False):
        assert not dispatch.only_global_handler_active()
    assert dispatch._hooks[4] is None and dispatch.only_global_handler_active()


def test_nested_counters_both_count_as_torch():
    def run(lib, counter_cls):
        a, b = lib.ones(2, 3), lib.ones(3, 4)
        with counter_cls(display=False) as outer:
            a @ b
            with counter_cls(display=False) as inner:
                a @ b
        return outer.get_total_flops(), inner.get_total_flops()

    assert run(sf, FlopCounterMode) == run(torch, tfc.FlopCounterMode) == (96, 48)


def test_reentering_a_counter_says_so():
    fc = FlopCounterMode(display=False)
    with fc:
        sf.ones(2, 3) @ sf.ones(3, 4)
        with pytest.raises(RuntimeError, match="not reentrant.*second FlopCounterMode"):
            fc.__enter__()
        sf.ones(2, 3) @ sf.ones(3, 4)
    assert fc.get_total_flops() == 96
    with fc:  # usable again after the block, counting afresh (torch clears on enter)
        sf.ones(2, 3) @ sf.ones(3, 4)
    assert fc.get_total_flops() == 48


def test_formulas_for_library_operators_are_refused():
    @sf.library.custom_op("flopcount::twice", mutates_args=())
    def twice(x: sf.Tensor) -> sf.Tensor:
        return x * 2

    with pytest.raises(NotImplementedError, match="torch.library are not seen by shardflow's counter"):
        FlopCounterMode(display=False, custom_mapping={sf.ops.flopcount.twice: lambda *a, **k: 1})


def test_compiled_modules_run_eagerly_while_counting():
    """A compiled replay runs no ops through the dispatcher: under a counter it runs eagerly."""
    m = sf.nn.Sequential(sf.nn.Linear(4, 4), sf.nn.ReLU(), sf.nn.Linear(4, 2))
    compiled = sf.compile(m)
    x = sf.ones(3, 4)
    compiled(x)
    compiled(x)  # a replay
    for _ in range(2):
        with FlopCounterMode(display=False) as fc:
            compiled(x)
        assert fc.get_total_flops() == 2 * 3 * 4 * 4 + 2 * 3 * 4 * 2
    assert compiled._compiled.stats["eager"] == 2
