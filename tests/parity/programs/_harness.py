"""Run a public PyTorch program twice, on torch and on shardflow, from the same start.

The program files beside this one are PyTorch programs (examples, tutorials, well-known
repositories) with only sizes, data, steps and argument parsing changed. The parity tests
load each file twice with :func:`load_pair` (torch, and its imports rewritten to shardflow by
``shardflow.testing.parity``) and then need the two runs to start from the same state:

* **Weights** -- :func:`same_weights` makes every model the program builds from a named class
  start from torch's initial weights: the torch run (always first) records each instance's
  ``state_dict`` right after its ``__init__``, and the shardflow run's instances, built in
  the same order, load those values. The program still builds its own models, where and
  when it does; only that program's class object gets a wrapped ``__init__``.
* **Randomness inside training** (reparameterisation noise, sampled actions) -- the two
  frameworks' generators differ (PyTorch: MT19937 and its own normal sampler; shardflow:
  PCG64), so :func:`same_draws` gives both programs the same NumPy draws for the named
  functions, and :func:`same_sampling` makes a ``Categorical``'s ``sample()`` pick by
  inverse CDF from a shared uniform stream. Everything else in the distribution
  (``log_prob``, ``entropy``) is the framework's own.
* **Dropout** is random too; :func:`dropout_off` sets ``p = 0`` on every dropout module (and
  attention dropout), as the tests that compare training with dropout do (said in each
  test).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

# shardflow is imported where a shardflow run needs it, not here: a torch run's rank process
# (programs/_launch.py, ddp_series/_seeded.py) imports this module and then needs only torch
# (CI time: shardflow's import is 0.4-0.7 s of CPU in each such process)

HERE = Path(__file__).parent


def load_pair(name: str):
    """``(torch_program, shardflow_program)``: the file ``programs/<name>.py`` executed as
    written and with its imports rewritten."""
    from shardflow.testing.parity import load_torch_file

    path = HERE / f"{name}.py"
    return (load_torch_file(path, use_shardflow=False, name=f"public_{name}_torch"),
            load_torch_file(path, use_shardflow=True, name=f"public_{name}_shardflow"))


def load_file(path, use_shardflow: bool, name: str) -> types.ModuleType:
    """``shardflow.testing.parity.load_torch_file`` (the file executed as a module named
    ``name``, its imports rewritten when ``use_shardflow``), without importing shardflow for
    a torch run: the same steps as that function's torch path."""
    if use_shardflow:
        from shardflow.testing.parity import load_torch_file

        return load_torch_file(path, use_shardflow=True, name=name)
    path = Path(path)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def run_script(path, use_shardflow: bool, argv=(), modules=None, after_imports=None, as_main=True):
    """Run the script ``path`` as ``python path ARGV`` would (``sys.argv`` set, ``__name__``
    ``"__main__"``; with ``as_main=False`` its ``if __name__ == "__main__":`` part does not
    run, so that the test can call its ``main()`` and get what it returns), in this process, with its imports rewritten to shardflow when
    ``use_shardflow``; ``modules`` (``{name: module}``) stand in ``sys.modules`` for its own
    sibling imports (``from model import GPT``) while it runs. ``after_imports(module)``, when
    given, runs once the script's leading import statements have run and before the rest
    (where :func:`same_draws` goes for a script whose work is at module level). Returns
    the module with the script's globals."""
    path = Path(path)
    source = path.read_text()
    if use_shardflow:
        from shardflow.testing.parity import refuse_torch_names, rewrite_imports

        source = rewrite_imports(source)
    body = ast.parse(source).body
    split = 0
    while split < len(body) and isinstance(body[split], ast.Import | ast.ImportFrom | ast.Expr):
        split += 1  # the docstring and the leading imports
    module = types.ModuleType("__main__" if as_main else f"{path.stem}_{'shardflow' if use_shardflow else 'torch'}")
    module.__file__ = str(path)
    saved_argv, saved_modules = sys.argv, {k: sys.modules.get(k) for k in modules or {}}
    sys.argv = [str(path), *argv]
    sys.modules.update(modules or {})
    try:
        head, rest = body[:split], body[split:]
        exec(compile(ast.Module(body=head, type_ignores=[]), str(path), "exec"), module.__dict__)
        if use_shardflow:
            refuse_torch_names(module)  # before it runs, not after
        if after_imports is not None:
            after_imports(module)
        exec(compile(ast.Module(body=rest, type_ignores=[]), str(path), "exec"), module.__dict__)
    finally:
        sys.argv = saved_argv
        for k, v in saved_modules.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module


def state_arrays(model) -> dict:
    """A module's state as NumPy arrays (either framework)."""
    return {k: np.array(v.detach().numpy(), copy=True) for k, v in model.state_dict().items()}


def copy_weights(th_model, sf_model) -> None:
    import shardflow

    sf_model.load_state_dict({k: shardflow.tensor(v) for k, v in state_arrays(th_model).items()})


def same_weights(th_prog, sf_prog, *class_names: str, prepare=None) -> dict:
    """Make the named model classes of both programs start from torch's weights (see the
    module docstring): each class's ``__init__`` is wrapped on that program's own class
    object (``super(Net, self)`` inside still finds the class by its name); ``prepare(model)``,
    when given, runs on every instance after that (e.g. :func:`dropout_off`). Returns
    ``{name: [state, ...]}``, the recorded initial states in construction order."""
    import shardflow

    records: dict[str, list] = {}
    for name in class_names:
        recorded = records.setdefault(name, [])
        th_cls, sf_cls = getattr(th_prog, name), getattr(sf_prog, name)
        th_orig, sf_orig = th_cls.__init__, sf_cls.__init__

        def th_init(self, *args, _cls=th_cls, _orig=th_orig, _rec=recorded, **kwargs):
            _orig(self, *args, **kwargs)
            if type(self) is _cls:  # not when a subclass's __init__ calls this one
                _rec.append(state_arrays(self))
                if prepare is not None:
                    prepare(self)

        def sf_init(self, *args, _cls=sf_cls, _orig=sf_orig, _rec=recorded, _next=[0], **kwargs):
            _orig(self, *args, **kwargs)
            if type(self) is not _cls:
                return
            if _next[0] >= len(_rec):
                raise AssertionError(f"the shardflow run built more {_cls.__name__} models "
                                     f"({_next[0] + 1}) than the torch run ({len(_rec)})")
            self.load_state_dict({k: shardflow.tensor(v) for k, v in _rec[_next[0]].items()})
            _next[0] += 1
            if prepare is not None:
                prepare(self)

        th_cls.__init__, sf_cls.__init__ = th_init, sf_init
    return records


def dropout_off(*models) -> None:
    """``p = 0`` on every dropout module of the models and ``dropout = 0`` on every
    MultiheadAttention (its attention dropout is a float attribute); the forward stays the
    program's."""
    for model in models:
        for m in model.modules():
            if "Dropout" in type(m).__name__:
                m.p = 0.0
            elif type(m).__name__ == "MultiheadAttention":
                m.dropout = 0.0


class _Through:
    """A module seen through: every attribute is the module's own except those set here."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        return getattr(self._lib, name)


class _Draws(_Through):
    """The program's ``torch`` module with some random functions replaced by draws from a
    NumPy generator; every other attribute is the module's own. ``RandomSampler`` replaces
    ``torch.utils.data.RandomSampler`` (the program's own use of it)."""

    def __init__(self, lib, rng: np.random.Generator, names):
        super().__init__(lib)
        self._rng = rng
        for name in names:
            if name == "RandomSampler":
                self.utils = _Through(lib.utils)
                self.utils.data = _Through(lib.utils.data)
                self.utils.data.RandomSampler = self._random_sampler()
            elif name == "nn.init.normal_":
                self.nn = _Through(lib.nn)
                self.nn.init = _Through(lib.nn.init)
                self.nn.init.normal_ = self._normal_
            else:
                setattr(self, name, getattr(self, f"_{name}"))

    def _random_sampler(self):
        rng = self._rng

        class SharedRandomSampler:
            """RandomSampler's indices drawn from the shared stream."""

            def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
                self.n = len(data_source)
                self.replacement = replacement
                self.num_samples = self.n if num_samples is None else num_samples

            def __iter__(self):
                if not self.replacement:
                    yield from rng.permutation(self.n).tolist()
                    return
                for _ in range(self.num_samples):
                    yield int(rng.integers(self.n))

            def __len__(self):
                return self.num_samples

        return SharedRandomSampler

    def _multinomial(self, probs, num_samples, replacement=False, **kwargs):
        if num_samples != 1:
            raise NotImplementedError("shared multinomial draws: num_samples=1 only")
        p = np.asarray(probs.detach().numpy(), np.float64)
        cdf = np.cumsum(p / p.sum(-1, keepdims=True), -1)
        u = self._rng.random(p.shape[:-1] + (1,))
        index = np.minimum((cdf < u).sum(-1, keepdims=True), p.shape[-1] - 1)
        return self._lib.from_numpy(index.astype(np.int64))

    def _normal_(self, tensor, mean=0.0, std=1.0, generator=None):
        if generator is not None:
            raise NotImplementedError("shared normal_ draws: generator= is not supported")
        # drawn in float64 and rounded once to float32, the same in both runs
        values = self._rng.standard_normal(tuple(tensor.shape)) * std + mean
        with self._lib.no_grad():
            tensor.copy_(self._tensor(values.astype(np.float32), tensor))
        return tensor

    def _tensor(self, array, like=None):
        dtype = like.dtype if like is not None else self._lib.float32
        return self._lib.from_numpy(np.ascontiguousarray(array)).to(dtype)

    def _randn_like(self, t, **kwargs):
        return self._tensor(self._rng.standard_normal(tuple(t.shape)).astype(np.float32), t)

    def _rand_like(self, t, **kwargs):
        return self._tensor(self._rng.random(tuple(t.shape)).astype(np.float32), t)

    def _randn(self, *size, **kwargs):
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        return self._tensor(self._rng.standard_normal(size).astype(np.float32))

    def _rand(self, *size, **kwargs):
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        return self._tensor(self._rng.random(size).astype(np.float32))

    def _randperm(self, n, **kwargs):
        return self._lib.from_numpy(self._rng.permutation(n).astype(np.int64))

    def _randint(self, low, high=None, size=None, **kwargs):
        if size is None and isinstance(high, tuple | list):  # randint(high, size)
            low, high, size = 0, low, high
        elif high is None:
            low, high = 0, low
        return self._lib.from_numpy(self._rng.integers(low, high, tuple(size)).astype(np.int64))


def same_draws(programs, names, seed: int = 0) -> None:
    """Give each program's ``torch`` the same draws (a fresh generator seeded ``seed`` each)
    for the functions in ``names`` (``randn_like``, ``rand_like``, ``randn``, ``rand``,
    ``randint``, ``randperm``, ``multinomial`` with one sample, ``RandomSampler`` for
    ``torch.utils.data.RandomSampler``, and ``nn.init.normal_`` for a program that
    initialises its model at module level through ``torch.nn.init.normal_``: then every
    tensor it fills that way gets the same values in both runs)."""
    for prog in programs:
        prog.torch = _Draws(prog.torch, np.random.default_rng(seed), names)


class _ModuleRecorder(_Through):
    def __init__(self, lib, name, into):
        super().__init__(lib)
        base = getattr(lib, name)
        grad_enabled = sys.modules["shardflow"].is_grad_enabled if lib.__name__.startswith("shardflow") else None
        if grad_enabled is None:
            import torch

            grad_enabled = torch.is_grad_enabled

        def forward(self, *args, **kwargs):
            out = base.forward(self, *args, **kwargs)
            into.append((grad_enabled(), out.item()))
            return out

        setattr(self, name, type(base.__name__, (base,), {"forward": forward}))


def record_module_outputs(program, module_name: str, class_name: str, into: list) -> None:
    """Make the modules ``program.<module_name>.<class_name>(...)`` builds (e.g. a
    ``nn.CrossEntropyLoss`` criterion) also append ``(grad_enabled, output.item())`` to
    ``into`` on every call; the outputs are unchanged."""
    setattr(program, module_name, _ModuleRecorder(getattr(program, module_name), class_name, into))


def _proxy_path(program, dotted: str):
    """The object at ``program.<dotted>`` seen through :class:`_Through` proxies, made along
    the path as needed (the program's own attributes then point at them)."""
    parent = program
    for part in dotted.split("."):
        current = getattr(parent, part)
        if not isinstance(current, _Through):
            current = _Through(current)
            setattr(parent, part, current)
        parent = current
    return parent


def _item(value) -> float:
    # a DTensor / global tensor: its whole value (a shardflow Tensor always has the method,
    # and it refuses local tensors; torch's plain Tensor has no such attribute)
    full = getattr(value, "full_tensor", None) if getattr(value, "is_global", True) else None
    return float((full() if callable(full) else value).item())


def record_calls(program, module_path: str, func_name: str, into: list, when=lambda: True) -> None:
    """Make ``program.<module_path>.<func_name>`` (``"F"``, ``"cross_entropy"``; or
    ``"torch.nn.utils"``, ``"clip_grad_norm_"``) also append its result's value to ``into``
    when ``when()``; what the program gets is unchanged."""
    owner = _proxy_path(program, module_path)
    func = getattr(owner, func_name)

    def recording(*args, **kwargs):
        out = func(*args, **kwargs)
        if when():
            into.append(_item(out))
        return out

    setattr(owner, func_name, recording)


def same_sampling(programs, class_name: str = "Categorical", seed: int = 0) -> None:
    """Make ``prog.<class_name>(...).sample()`` pick by inverse CDF from a shared uniform
    stream (one fresh generator seeded ``seed`` per program)."""
    for prog in programs:
        base = getattr(prog, class_name)
        lib = prog.torch
        rng = np.random.default_rng(seed)

        def sample(self, sample_shape=(), _rng=rng, _lib=lib):
            probs = np.asarray(self.probs.detach().numpy(), np.float64)
            cdf = np.cumsum(probs / probs.sum(-1, keepdims=True), -1)
            u = _rng.random(tuple(sample_shape) + probs.shape[:-1])
            index = np.minimum((cdf < u[..., None]).sum(-1), probs.shape[-1] - 1)
            return _lib.from_numpy(np.asarray(index, np.int64))

        setattr(prog, class_name, type(base.__name__, (base,), {"sample": sample}))


def printed_lines(text: str, starts: str) -> list:
    """The lines of several processes' shared output that begin with the regex ``starts``,
    sorted (the ranks' order is not fixed). A print's text and its newline are separate
    writes, so one rank's line can land inside another's ("...Steps: 32[GPU1] Epoch 0 ...":
    torch's torchrun run in CI did): each line is cut before every match of ``starts``."""
    start = re.compile(starts)
    pieces = []
    for line in text.splitlines():
        cuts = [m.start() for m in start.finditer(line)]
        pieces += [line[a:b].strip() for a, b in zip(cuts, cuts[1:] + [len(line)])]
    return sorted(pieces)


def assert_close(sf_values, th_values, what: str, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    sf_values = np.asarray(sf_values, np.float64)
    th_values = np.asarray(th_values, np.float64)
    assert sf_values.shape == th_values.shape, (what, sf_values.shape, th_values.shape)
    np.testing.assert_allclose(sf_values, th_values, rtol=rtol, atol=atol, err_msg=what)


def assert_same_state(sf_model, th_model, what: str, rtol: float = 1e-4, atol: float = 1e-5,
                      rounding_only=None) -> None:
    """Every entry of the two models' state dicts agrees. ``rounding_only(key, array)``, when
    given, returns the part of an entry whose gradient is zero in exact arithmetic (then
    Adam turns rounding noise into steps of size ~lr of either sign); that part is held to
    ``rounding_only_atol`` instead, the rest as usual."""
    th_state, sf_state = state_arrays(th_model), state_arrays(sf_model)
    assert list(sf_state) == list(th_state), what
    for k, v in sf_state.items():
        t = th_state[k]
        if rounding_only is not None:
            mask = rounding_only(k, t)
            if mask is not None:
                bound, mask = mask
                assert_close(v[mask], t[mask], f"{what}: {k} (zero-gradient part)", rtol=0, atol=bound)
                v, t = v[~mask], t[~mask]
        assert_close(v, t, f"{what}: {k}", rtol, atol)


def attention_key_bias(embed_dim: int, bound: float):
    """``rounding_only`` for :func:`assert_same_state`: the key part (``[E:2E]``) of a fused
    q/k/v projection bias (``c_attn.bias``, ``in_proj_bias``). Its gradient is zero in exact
    arithmetic (softmax ignores a score shift shared by every key of a query), so Adam steps
    it by about +-lr on the sign of rounding noise: it is only bounded, by ``bound``."""

    def key_part(key, value):
        if not key.endswith(("c_attn.bias", "in_proj_bias")):
            return None
        mask = np.zeros(value.shape, bool)
        mask[embed_dim:2 * embed_dim] = True
        return bound, mask

    return key_part


def run_in_own_session(cmd, *, cwd, env, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)`` for a program that starts its
    own processes, in a session of its own; every process it leaves behind is killed when it
    returns (or times out). torch 2.13's gloo teardown can abort one child and leave the other
    (rank 0, holding the TCPStore on the program's fixed MASTER_PORT) alive: a second attempt's
    rank 0 then fails with EADDRINUSE while its rank 1 joins the orphan's store."""
    from shardflow.comm.launcher import kill_session

    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(proc.pid, grace=1.0)
        out, err = proc.communicate()
        raise AssertionError(f"{cmd} timed out after {timeout:g} s:\n{out}\n{err}") from None
    finally:
        kill_session(proc.pid, grace=1.0)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
