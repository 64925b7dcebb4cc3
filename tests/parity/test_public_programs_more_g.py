"""More public PyTorch programs (tests/parity/programs/) run on torch and, with only their
imports changed, on shardflow, from the same start, compared step by step (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

Here: pytorch/tutorials' autograd and ``torch.func`` tutorials
(``programs/func_tutorials/``), each run as a script (``run_script``, ``__main__``) on both
frameworks. Their random data come from one shared NumPy stream (``same_draws``); the layers
they build start from torch's initial weights (:func:`_torch_init`). What they print is
compared line by line (timings masked, ``shardflow.Size`` read as ``torch.Size``: the type
prints its own framework's name), and the values they compute are compared to torch's.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from .programs._harness import assert_close, run_script, same_draws

pytestmark = pytest.mark.usefixtures("torch_single_thread")

PROGRAMS = Path(__file__).parent / "programs" / "func_tutorials"


def _torch_init(patch, use_shardflow, records, classes):
    """Every new ``nn.<class>`` (for each name in ``classes``) of this run records (torch) or
    loads (shardflow, built in the same order) torch's initial state; ``patch`` is a
    ``monkeypatch.context()``, so the classes are back as they were after the run."""
    import torch

    import shardflow

    lib = shardflow if use_shardflow else torch
    loaded = []
    for name in classes:
        cls = getattr(lib.nn, name)

        def init(self, *args, _orig=cls.__init__, _cls=cls, **kwargs):
            _orig(self, *args, **kwargs)
            if type(self) is not _cls:
                return
            if not use_shardflow:
                records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
                return
            self.load_state_dict({k: lib.from_numpy(v) for k, v in records[len(loaded)].items()})
            loaded.append(self)

        patch.setattr(cls, "__init__", init)


_TIME = re.compile(r"\b\d+(\.\d+)? (ns|us|ms|s)\b")


def _printed(out: str) -> list[str]:
    """The printed lines with what legitimately differs masked: object addresses and module
    paths of benchmark Measurements and other framework objects (``<...prune.RandomUnstructured
    object at 0x...>``), measured times and percentages, the Size type's framework name."""
    lines = []
    for line in out.splitlines():
        line = line.replace("shardflow.Size", "torch.Size")
        line = re.sub(r"<[\w.]+\.Measurement object at 0x[0-9a-f]+>", "<Measurement>", line)
        line = re.sub(r"<(torch|shardflow)\.[\w.]+\.(\w+) object at 0x[0-9a-f]+>", r"<\2 object>", line)
        # a hook handle's id comes from a process-wide counter of every hook registration (in
        # both frameworks; tests/autograd/test_hook_handle_ids.py): in a test session its value
        # depends on the hooks other tests registered earlier, on one framework or the other
        line = re.sub(r"\((\d+), (<\w+ object>)\)", r"(<id>, \2)", line)
        line = _TIME.sub("<time>", line)
        line = re.sub(r"delta: [\d.]+ percent", "delta: <pct> percent", line)
        lines.append(line)
    return lines


_NUMBER = re.compile(r"-?\d+\.\d*(e[-+]\d+)?")


def _assert_same_printed(sf_out: str, th_out: str, rtol: float = 1e-5, atol: float = 0.0) -> None:
    """The printed lines agree (see :func:`_printed`) as text with their decimal numbers taken
    out, and those numbers to ``rtol``/``atol`` (a printed tensor rounds to 4 significant
    digits, so a value that differs by rounding may print one last digit apart)."""
    sf_lines, th_lines = _printed(sf_out), _printed(th_out)
    assert [_NUMBER.sub("<n>", x) for x in sf_lines] == [_NUMBER.sub("<n>", x) for x in th_lines]
    sf_numbers = [float(m.group()) for x in sf_lines for m in _NUMBER.finditer(x)]
    th_numbers = [float(m.group()) for x in th_lines for m in _NUMBER.finditer(x)]
    assert_close(sf_numbers, th_numbers, "printed numbers", rtol=rtol, atol=atol)


def _shared_draws(mod, names) -> None:
    """``same_draws`` for the program, its ``randn``'s and ``rand``'s ``dtype=`` and ``requires_grad=``
    honoured (the draws are float32 values, cast to the dtype alike in both runs)."""
    same_draws([mod], [n for n in names if n != "bernoulli"])
    draws = mod.torch
    for name in ("randn", "rand"):
        if name in names:
            def drawn(*size, dtype=None, requires_grad=False, device=None, _shared=getattr(draws, name)):
                t = _shared(*size)
                return (t if dtype is None else t.to(dtype)).requires_grad_(requires_grad)

            setattr(draws, name, drawn)
    if "bernoulli" in names:
        def bernoulli(p, _lib=draws._lib, _rng=draws._rng):
            probs = np.asarray(p.detach().numpy())
            return _lib.from_numpy((_rng.random(probs.shape) < probs).astype(probs.dtype))

        draws.bernoulli = bernoulli


def _shared_orthogonal(patch, lib, seed=1):
    """``lib.nn.init.orthogonal_`` with torch's algorithm (QR of a normal matrix, the signs
    of R's diagonal folded into Q) on draws from a NumPy stream seeded ``seed``, the same in
    both runs (``patch`` is a ``monkeypatch.context()``)."""
    rng = np.random.default_rng(seed)

    def orthogonal_(tensor, gain=1, generator=None):
        rows = tensor.shape[0]
        cols = tensor.numel() // rows
        flat = rng.standard_normal((rows, cols)).astype(np.float32).astype(np.float64)
        if rows < cols:
            flat = flat.T
        q, r = np.linalg.qr(flat)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        with lib.no_grad():
            tensor.copy_(lib.from_numpy((gain * q).astype(np.float32).reshape(tuple(tensor.shape))))
        return tensor

    patch.setattr(lib.nn.init, "orthogonal_", orthogonal_)


def _run_both(capsys, monkeypatch, name, draws=("randn",), init=(), argv=(), orthogonal=False):
    """Run ``func_tutorials/<name>.py`` on torch, then on shardflow; returns
    ``[(module, printed_lines), ...]``."""
    import torch

    import shardflow

    records, runs = [], []
    for use_sf in (False, True):
        with monkeypatch.context() as patch:
            _torch_init(patch, use_sf, records, init)
            if orthogonal:
                _shared_orthogonal(patch, shardflow if use_sf else torch)
            mod = run_script(PROGRAMS / f"{name}.py", use_sf, argv=argv,
                             after_imports=lambda m: _shared_draws(m, draws))
        runs.append((mod, capsys.readouterr().out))
    return runs


def _np(t):
    return np.asarray(t.detach().numpy(), np.float64)


def test_per_sample_grads_like_torch(capsys, monkeypatch):
    """pytorch/tutorials per_sample_grads: a CNN's per-sample gradients by a loop of
    ``autograd.grad`` and by ``vmap(grad(compute_loss), in_dims=(None, None, 0, 0))`` over
    ``functional_call(model, (params, buffers), ...)``, the script's own ``allclose``
    check, and its ``torch.utils.benchmark.Timer`` comparison (whose Measurement repr must
    print torch's lines: "1 runs , 1 thread" for one measurement). Batch of 4 from the shared
    draws; Conv2d/Linear start from torch's weights. Both per-sample gradient sets agree with
    torch's to rtol 1e-4 (convolution sums in float32 in another order: measured max
    relative difference ~1e-5 on the larger entries)."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "per_sample_grads",
                                           draws=("randn", "randint"), init=("Conv2d", "Linear"))
    assert _printed(sf_out) == _printed(th_out)
    assert _printed(th_out)[0] == "torch.Size([4, 32, 1, 3, 3])"
    assert "mismatch" not in th_out
    assert len(sf.per_sample_grads) == len(th.per_sample_grads) == 8
    for s, t in zip(sf.per_sample_grads, th.per_sample_grads, strict=True):
        assert_close(_np(s), _np(t), "per-sample grads (loop)", rtol=1e-4, atol=1e-6)
    assert list(sf.ft_per_sample_grads) == list(th.ft_per_sample_grads)
    for k in th.ft_per_sample_grads:
        assert_close(_np(sf.ft_per_sample_grads[k]), _np(th.ft_per_sample_grads[k]), f"vmap grads {k}",
                     rtol=1e-4, atol=1e-6)
    assert_close(_np(sf.model.conv1.weight.grad), _np(th.model.conv1.weight.grad), "batch grad", rtol=1e-4,
                 atol=1e-6)


def test_jacobians_hessians_like_torch(capsys, monkeypatch):
    """pytorch/tutorials jacobians_hessians: Jacobians row by row (``autograd.grad`` with unit
    vectors), by ``vmap(vjp_fn)``, ``jacrev(argnums=2)``, ``jacrev(argnums=(0, 1))``,
    ``jacfwd``, ``hessian`` and its jacfwd/jacrev compositions, ``vmap(jacrev(...),
    in_dims=(None, None, 0))``, the summed-output trick with ``movedim``, a batched hessian,
    and hvp by ``jvp(grad(f))`` and ``vjp(grad(f))``. Weights and inputs from the shared
    draws. The printed lines (the first Jacobian row as torch formats it) and every computed
    quantity agree with torch's to rtol 1e-5, atol 1e-5 (measured: the largest difference is
    2e-6 on Hessians of size ~5; a saturated ``tanh`` row's derivative ``1 - tanh(x)**2`` is
    ~1e-6, where one ulp of tanh's float32 value is a 5e-5 relative change, so the printed
    first row is compared to atol 1e-9)."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "jacobians_hessians")
    _assert_same_printed(sf_out, th_out, atol=1e-9)
    assert _printed(th_out)[0] == "torch.Size([16, 16])"
    for name in ("jacobian", "ft_jacobian", "ft_jac_weight", "ft_jac_bias", "hess_api", "hess_fwdfwd",
                 "hess_revrev", "batch_jacobian0", "batch_jacobian1", "batch_hess", "result"):
        s, t = getattr(sf, name), getattr(th, name)
        assert tuple(s.shape) == tuple(t.shape), name
        assert_close(_np(s), _np(t), name, rtol=1e-5, atol=1e-5)
    assert tuple(th.batch_hess.shape) == (4, 6, 5, 5)
    assert_close(_np(sf.result_hvp_revrev[0]), _np(th.result_hvp_revrev[0]), "hvp_revrev")


def test_ensembling_like_torch(capsys, monkeypatch):
    """pytorch/tutorials ensembling: ten MLPs run in a loop and vectorised
    (``stack_module_state``, ``functional_call`` on a ``copy.deepcopy`` moved with
    ``.to('meta')``, ``vmap(fmodel)`` and ``vmap(fmodel, in_dims=(0, 0, None))``), with the
    script's own allclose checks and Timer prints. The models start from torch's weights
    (each Linear), the data from the shared draws; every prediction agrees with torch's to
    rtol 1e-5."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "ensembling", draws=("randn", "randint"),
                                           init=("Linear",))
    _assert_same_printed(sf_out, th_out)
    assert _printed(th_out)[0] == "[10, 10, 10, 10, 10, 10]"
    assert sf.base_model.fc1.weight.is_meta and th.base_model.fc1.weight.is_meta
    assert list(sf.params) == list(th.params) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                                                  "fc3.bias"]
    for k in th.params:
        assert_close(_np(sf.params[k]), _np(th.params[k]), f"stacked {k}", rtol=0, atol=0)
    for name in ("predictions1_vmap", "predictions2_vmap"):
        assert_close(_np(getattr(sf, name)), _np(getattr(th, name)), name, rtol=1e-5, atol=1e-6)
    for s, t in zip(sf.predictions_diff_minibatch_loop, th.predictions_diff_minibatch_loop, strict=True):
        assert_close(_np(s), _np(t), "loop predictions", rtol=1e-5, atol=1e-6)


def test_neural_tangent_kernels_like_torch(capsys, monkeypatch):
    """pytorch/tutorials neural_tangent_kernels: the empirical NTK of a CNN by Jacobian
    contraction (``vmap(jacrev(fnet_single), (None, 0))`` over ``functional_call``; dicts of
    Jacobians, ``einsum('Naf,Mbf->NMab')`` and the trace form) and by NTK-vector products
    (``vjp``, ``jvp``, ``vmap`` over the identity's rows, ``vmap(vmap(get_ntk, (None, 0)),
    (0, None))``, ``einsum('NMKK->NM')``), the script's allclose between them. 1 train and 1
    test images from the shared draws, Conv2d/Linear from torch's weights. Both kernels agree
    with torch's to rtol 1e-4 (sums over 21632 float32 products in another order: measured
    max relative difference ~1e-5)."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "neural_tangent_kernels",
                                           init=("Conv2d", "Linear"))
    assert _printed(sf_out) == _printed(th_out) == ["torch.Size([1, 1, 10, 10])", "torch.Size([1, 1])"]
    for name in ("result", "result_from_jacobian_contraction", "result_from_ntk_vps"):
        s, t = getattr(sf, name), getattr(th, name)
        assert tuple(s.shape) == tuple(t.shape), name
        assert_close(_np(s), _np(t), name, rtol=1e-4, atol=1e-5)
    assert tuple(th.result_from_ntk_vps.shape) == (1, 1, 10, 10)


@pytest.mark.filterwarnings("ignore:We've integrated functorch into PyTorch")  # the tutorial's own functorch calls
def test_forward_ad_usage_like_torch(capsys, monkeypatch):
    """pytorch/tutorials forward_ad_usage: ``dual_level`` / ``make_dual`` / ``unpack_dual``
    (the tangent kept as is when laid out like the primal, copied for ``tangent.T``; None
    after the level closes), a Linear whose parameters are swapped for dual tensors by
    ``delattr``/``setattr`` and through ``functional_call``, a custom Function with only a
    ``jvp`` staticmethod checked by ``gradcheck(check_forward_ad=True,
    check_backward_ad=False, ...)``, and functorch's ``jvp`` and
    ``make_functional_with_buffers`` (``import functorch as ft``). Data from the shared draws
    (``randn``, ``rand_like``), the Linears from torch's weights. Every JVP, primal output and
    tangent agrees with torch's to rtol 1e-5 (the custom Function's, in float64, to 1e-12)."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "forward_ad_usage", draws=("randn", "rand_like"),
                                           init=("Linear",))
    assert sf_out == th_out == ""
    assert sf.ft.__name__ == "shardflow.functorch"
    for name in ("jvp2", "primal_out", "tangent_out", "model_output", "jvp_out"):
        assert_close(_np(getattr(sf, name)), _np(getattr(th, name)), name, rtol=1e-5, atol=1e-6)
    assert_close(_np(sf.jvp), _np(th.jvp), "custom Function jvp", rtol=1e-12, atol=0)
    assert str(sf.jvp.dtype).split(".")[-1] == str(th.jvp.dtype).split(".")[-1]
    assert_close(_np(sf.dual_output), _np(th.dual_output), "exp(primal)", rtol=1e-12, atol=0)


def test_custom_function_double_backward_like_torch(capsys, monkeypatch):
    """pytorch/tutorials custom_function_double_backward_tutorial: custom Functions saving an
    input (Square), an output (Exp), intermediates returned as outputs (Sinh), intermediates
    on ctx (the "what NOT to do" Sinh: its ``grad_x`` has no graph, in torch and here), and a
    backward that is a custom Function (Cube/CubeBackward); the script's gradcheck and
    gradgradcheck on each, and ``autograd.grad(create_graph=True)``. For each example the
    first derivative, whether it has a graph (and its node's ``name()``), and the second
    derivative through it agree with torch's (float64: rtol 1e-12)."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "custom_function_double_backward", draws=("rand",))
    assert sf_out == th_out == ""
    assert len(sf.graphs) == len(th.graphs) == 5
    import torch

    import shardflow

    for k, ((sg, sx, so), (tg, tx, to)) in enumerate(zip(sf.graphs, th.graphs, strict=True)):
        assert_close(_np(sg), _np(tg), f"grad_x {k}", rtol=1e-12, atol=0)
        assert_close(_np(so), _np(to), f"out {k}", rtol=1e-12, atol=0)
        assert sg.requires_grad == tg.requires_grad, k
        if not tg.requires_grad:
            assert k == 3 and sg.grad_fn is None  # the ctx-held intermediates: no graph
            continue
        assert sg.grad_fn.name() == tg.grad_fn.name(), k
        (tgg,) = torch.autograd.grad(tg.sum(), tx)
        (sgg,) = shardflow.autograd.grad(sg.sum(), sx)
        assert_close(_np(sgg), _np(tgg), f"second derivative {k}", rtol=1e-12, atol=0)
    assert th.graphs[4][0].grad_fn.name() == "CubeBackwardBackward"


def test_optimizer_step_in_backward_like_torch(capsys, monkeypatch, tmp_path):
    """pytorch/tutorials optimizer_step_in_backward_tutorial: 3 Adam steps the usual way
    (``step``, ``zero_grad``), then one ``Adam([p], foreach=False)`` per parameter stepped
    and zeroed from ``register_post_accumulate_grad_hook`` during ``backward``, 3 more steps.
    The CUDA memory snapshots became the bytes of gradients held each time a gradient is
    accumulated (a recording post-accumulate hook per parameter, removed after; pickled to
    the tutorial's file names in a tmp dir): growing to all four gradients in the usual loop,
    always 0 with the step in backward (the optimizer's hook, registered first, steps and
    sets the gradient to None before the recording hook reads it) -- the saving the
    tutorial shows. One difference, measured and left: within one ``nn.Linear`` torch
    accumulates the bias's gradient before the weight's (addmm's bias edge is an
    AccumulateGrad, the weight's goes through a TBackward0 node first), shardflow the
    weight's first (its Linear node's edges are (input, weight, bias)), so the recorded
    running totals differ at the first entry of each step ([40, 5800, ...] against [5760,
    5800, ...]); the totals after each parameter pair and the phase-2 list are the same.
    Images from the shared draws, the layers from torch's weights; the final weights agree
    with torch's to rtol 1e-5."""
    import pickle

    monkeypatch.chdir(tmp_path)
    records, runs = [], []
    for use_sf in (False, True):
        with monkeypatch.context() as patch:
            _torch_init(patch, use_sf, records, ("Conv2d", "Linear"))
            mod = run_script(PROGRAMS / "optimizer_step_in_backward.py", use_sf,
                             after_imports=lambda m: _shared_draws(m, ("rand",)))
        snapshots = [pickle.loads((tmp_path / n).read_bytes()) for n in ("snapshot.pickle",
                                                                          "snapshot-opt-in-bwd.pickle")]
        runs.append((mod, snapshots))
    (th, th_snaps), (sf, sf_snaps) = runs
    assert capsys.readouterr().out == ""
    assert sf_snaps[1] == th_snaps[1]
    assert [v for i, v in enumerate(sf_snaps[0]) if i % 4] == [v for i, v in enumerate(th_snaps[0]) if i % 4]
    fc = th.model[3]
    assert th_snaps[0][0] == fc.bias.numel() * 4 and sf_snaps[0][0] == fc.weight.numel() * 4  # the order above
    full = sum(p.numel() * 4 for p in th.model.parameters())
    assert th_snaps[0][3::4] == [full] * 3 and len(th_snaps[0]) == 12 and th_snaps[0][0] < full
    assert th_snaps[1] == [0] * 12
    assert len(sf.optimizer_dict) == len(th.optimizer_dict) == 4
    for (sk, sv), (tk, tv) in zip(sf.model.state_dict().items(), th.model.state_dict().items(), strict=True):
        assert sk == tk
        assert_close(_np(sv), _np(tv), sk, rtol=1e-5, atol=1e-6)
    steps = [opt.state[p]["step"] for p, opt in th.optimizer_dict.items()]
    assert [float(s) for s in steps] == [3.0] * 4
    assert [float(opt.state[p]["step"]) for p, opt in sf.optimizer_dict.items()] == [3.0] * 4


def test_parametrizations_like_torch(capsys, monkeypatch):
    """pytorch/tutorials parametrizations (torch.nn.utils.parametrize): Symmetric and Skew
    parametrizations on Linear and Conv2d, the parametrized module's print (``ParametrizedLinear``
    with its ``parametrizations`` ModuleDict), ``ParametrizationList`` indexing,
    ``named_parameters`` (``parametrizations.weight.original``), ``parametrize.cached()``
    (the printed "Computing the Parametrization" lines count the recomputations),
    concatenated Skew + CayleyMap (``linalg.solve``) and MatrixExponential, ``right_inverse``
    on assignment (incl. through two parametrizations and ``nn.init.orthogonal_``), a
    Bernoulli pruning mask, and ``remove_parametrizations`` with and without
    ``leave_parametrized``. Layers start from torch's weights, ``rand``/``rand_like``/
    ``bernoulli``/``orthogonal_`` from shared draws. Every printed line agrees (tensors'
    values to rtol 1e-5; the ``torch.dist`` results that are rounding noise, ~1e-7, to atol
    1e-6)."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "parametrizations",
                                           draws=("rand", "rand_like", "bernoulli"), init=("Linear", "Conv2d"),
                                           orthogonal=True)
    _assert_same_printed(sf_out, th_out, atol=1e-6)
    lines = _printed(th_out)
    assert lines.count("Computing the Parametrization") == 5  # 3 uncached reads + 1 in cached(), and 1 on print
    assert "ParametrizedLinear(" in th_out and "(original)" not in th_out
    assert_close(_np(sf.layer.weight), _np(th.layer.weight), "final weight", rtol=1e-6, atol=0)
    assert_close(_np(sf.layer_orthogonal.weight), _np(th.layer_orthogonal.weight), "orthogonal weight",
                 rtol=1e-5, atol=1e-6)


def _shared_prune_rand(patch, use_shardflow, seed=2):
    """The random pruning draws (torch's ``RandomUnstructured`` calls ``torch.rand_like``,
    shardflow's ``prune.rand``) from one NumPy stream seeded ``seed``, the same in both runs."""
    import torch

    import shardflow
    import shardflow.nn.utils.prune as sf_prune

    rng = np.random.default_rng(seed)
    if use_shardflow:
        patch.setattr(sf_prune, "rand", lambda *size, **kw: shardflow.from_numpy(
            rng.random(size[0] if len(size) == 1 and not isinstance(size[0], int) else size).astype(np.float32)))
    else:
        patch.setattr(torch, "rand_like", lambda t, **kw: torch.from_numpy(
            rng.random(tuple(t.shape)).astype(np.float32)))


def test_pruning_tutorial_like_torch(capsys, monkeypatch):
    """pytorch/tutorials pruning_tutorial (torch.nn.utils.prune) on its LeNet: the printed
    parameters, buffers (``weight_mask``), pruned ``weight``/``bias`` and forward pre-hooks
    after random_unstructured, l1_unstructured (a count), ln_structured on top (a
    PruningContainer, listed), the state_dict keys, ``prune.remove``, pruning by module type,
    global_unstructured and the printed sparsities, and a custom ``BasePruningMethod``. The
    layers start from torch's weights, the random mask from shared draws. Every printed line
    agrees (numbers to rtol 1e-5; object addresses masked)."""
    records, runs = [], []
    for use_sf in (False, True):
        with monkeypatch.context() as patch:
            _torch_init(patch, use_sf, records, ("Conv2d", "Linear"))
            _shared_prune_rand(patch, use_sf)
            mod = run_script(PROGRAMS / "pruning_tutorial.py", use_sf)
        runs.append((mod, capsys.readouterr().out))
    (th, th_out), (sf, sf_out) = runs
    _assert_same_printed(sf_out, th_out)
    lines = _printed(th_out)
    assert "OrderedDict([(<id>, <RandomUnstructured object>)])" in lines
    assert any(x.startswith("Sparsity in fc1.weight:") for x in lines) and lines[-1].startswith("tensor([0., 1.,")
    for (sk, sv), (tk, tv) in zip(sf.new_model.state_dict().items(), th.new_model.state_dict().items(), strict=True):
        assert sk == tk
        assert_close(_np(sv), _np(tv), sk, rtol=0, atol=0)


def test_autograd_saved_tensors_hooks_like_torch(capsys, monkeypatch):
    """pytorch/tutorials autograd_saved_tensors_hooks_tutorial: ``grad_fn._saved_self`` /
    ``_saved_other`` (the inputs themselves: ``is a`` True) and ``_saved_result`` (equal, not
    the same object), ``saved_tensors_hooks`` with printing hooks (torch's tensors, other
    before self, in pack and unpack), scaling hooks (``x.grad.equal(2 * x)``), an int, a
    tuple with a closure, a repr eval'ed back, ``save_on_cpu(pin_memory=True)``, and
    pack/unpack to disk with torch.save/torch.load in a TemporaryDirectory (the second read
    of a deleted file fails: "Double access failed!"), the self-deleting temp file and a
    SaveToDisk module under nn.DataParallel. Data from the shared draws, the Linears from
    torch's weights. Every printed line agrees (numbers to rtol 1e-5), and so do the final
    models' gradients."""
    (th, th_out), (sf, sf_out) = _run_both(capsys, monkeypatch, "autograd_saved_tensors_hooks", init=("Linear",))
    _assert_same_printed(sf_out, th_out)
    lines = _printed(th_out)
    assert lines[2:6] == ["True", "True", "True", "False"] and lines[-1] == "Double access failed!"
    assert lines[6] == "Packing tensor([2., 2., 2., 2., 2.], grad_fn=<MulBackward0>)"
    for (sn, sp), (tn, tp) in zip(sf.model.named_parameters(), th.model.named_parameters(), strict=True):
        assert sn == tn
        assert_close(_np(sp.grad), _np(tp.grad), f"{tn}.grad", rtol=1e-5, atol=1e-6)


def _shared_kaiming_and_no_dropout(patch, use_shardflow, records):
    """Every ``nn.init.kaiming_uniform_`` call of the run records (torch) or loads (shardflow,
    same call order: both frameworks' Linear/Conv2d call it through the module attribute)
    torch's values, so a Module that initialises its own Parameter with it (FusedConvBN)
    starts alike; every ``nn.Dropout`` gets p=0."""
    import torch

    import shardflow

    lib = shardflow if use_shardflow else torch
    original, dropout_init = lib.nn.init.kaiming_uniform_, lib.nn.Dropout.__init__
    loaded = []

    def kaiming_uniform_(tensor, *args, **kwargs):
        original(tensor, *args, **kwargs)
        if not use_shardflow:
            records.append(tensor.detach().numpy().copy())
        else:
            with lib.no_grad():
                tensor.copy_(lib.from_numpy(records[len(loaded)]))
            loaded.append(tensor)
        return tensor

    def init_dropout(self, *args, **kwargs):
        dropout_init(self, *args, **kwargs)
        self.p = 0.0

    patch.setattr(lib.nn.init, "kaiming_uniform_", kaiming_uniform_)
    patch.setattr(lib.nn.Dropout, "__init__", init_dropout)


def test_custom_function_conv_bn_like_torch(capsys, monkeypatch):
    """pytorch/tutorials custom_function_conv_bn_tutorial: Conv2D and BatchNorm custom
    Functions with hand-written backward (``once_differentiable``) and their fusion (the
    convolution recomputed in backward), each checked by the script's gradcheck; a FusedConvBN
    Module (``kaiming_uniform_``); the MNIST Net trained fused and unfused (Adadelta, StepLR,
    ``inference_mode`` in test) for 2 epochs on 16 synthetic images. Weights from torch's
    initial values (each kaiming_uniform_ call and each Linear/Conv2d), Dropout(0.5) at p=0,
    the rand inputs of the gradchecks shared. Every printed loss and accuracy agrees (losses
    to rtol 1e-4: Adadelta with lr=1.0 steps far, the loss grows to ~20, and float32
    differences grow with it; measured max relative difference ~1e-6 -- 1e-5); the
    saved-tensor "peak memory" line is printed in GB (0.01 both) and agrees."""
    records, kaiming, runs = [], [], []
    for use_sf in (False, True):
        with monkeypatch.context() as patch:
            _torch_init(patch, use_sf, records, ("Conv2d", "Linear"))
            _shared_kaiming_and_no_dropout(patch, use_sf, kaiming)
            mod = run_script(PROGRAMS / "custom_function_conv_bn.py", use_sf,
                             after_imports=lambda m: _shared_draws(m, ("rand",)))
        runs.append((mod, capsys.readouterr().out))
    (th, th_out), (sf, sf_out) = runs
    _assert_same_printed(sf_out, th_out, rtol=1e-4)
    lines = _printed(th_out)
    assert sum(x.startswith("Train Epoch") for x in lines) == 4 and lines[-1].startswith("fused peak memory")
    assert len(kaiming) == 4 + 4  # fused: 2 FusedConvBN, 2 Linear; unfused: 2 Conv2d, 2 Linear
