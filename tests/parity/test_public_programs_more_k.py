"""pytorch/tutorials' recipes (``recipes_source/recipes/``), run as scripts on torch and, with
their imports rewritten, on shardflow (``programs/recipes/``; each file's header says where
it comes from and what changed), compared on what they print and compute (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

Left out: ``changing_default_device`` (its code is ``torch.device('cuda')`` /
``set_default_device('cuda')``: it needs CUDA), ``timer_quick_start`` (C++ ``Timer``s and
Callgrind), ``zeroing_out_gradients`` (the blitz CIFAR-10 training loop again, which
``test_public_programs_more_h.py`` runs), ``amp_recipe`` (CUDA float16 autocast and
GradScaler), the later sections of ``swap_tensors`` (``__torch_dispatch__`` wrapper
subclasses; its first two run here).
"""

import json
import re
import struct
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import shardflow

from .programs._harness import _Draws, _Through, assert_close, run_script
from .programs.recipes._resnet_standin import torchvision_modules

pytestmark = pytest.mark.usefixtures("torch_single_thread")

RECIPES = Path(__file__).parent / "programs" / "recipes"


def _run(name, use_sf, tmp_path, monkeypatch, capsys, **kwargs):
    """Run ``recipes/<name>.py`` in its own working directory; returns (module, stdout
    lines, directory)."""
    where = tmp_path / ("sf" if use_sf else "th")
    where.mkdir(exist_ok=True)
    monkeypatch.chdir(where)
    mod = run_script(RECIPES / f"{name}.py", use_sf, **kwargs)
    return mod, capsys.readouterr().out.splitlines(), where


def _as_torch(lines):
    # shardflow prints its own module name where torch prints ``torch.`` (docs/COMPAT.md)
    return [line.replace("shardflow.Size(", "torch.Size(") for line in lines]


def test_reasoning_about_shapes_recipe(tmp_path, monkeypatch, capsys):
    """reasoning_about_shapes: Conv2d on the meta device (a 2x3x10x10 and a
    1024x3x65536x65536 input: nothing allocated), then LeNet built under ``with
    torch.device("meta")`` with a forward hook on every module printing ``f"{module}"`` and
    ``output.shape``. Every printed line is torch's (times masked; ``shardflow.Size`` read as
    ``torch.Size``): the meta tensors' reprs with ``grad_fn=<ConvolutionBackward0>``, the
    module reprs, every intermediate shape. (Convolution and pooling on meta tensors raised
    before.)"""
    outs = []
    for use_sf in (False, True):
        mod, lines, _ = _run("reasoning_about_shapes", use_sf, tmp_path, monkeypatch, capsys)
        times = [line for line in lines if line.startswith("Time taken: ")]
        assert len(times) == 2 and all(float(t.split()[-1]) >= 0 for t in times)
        outs.append([line for line in lines if not line.startswith("Time taken: ")])
        assert mod.out.is_meta and tuple(mod.out.shape) == (1024, 10)
    th_out, sf_out = outs
    assert any("size=(1024, 5, 65535, 65535)" in line for line in th_out)
    assert len([line for line in th_out if line.startswith("Shape of output to ")]) == 8
    assert _as_torch(sf_out) == th_out


def test_module_load_state_dict_tips_recipe(tmp_path, monkeypatch, capsys):
    """module_load_state_dict_tips: ``torch.save`` of a ModuleList of ten Linear(1, 1),
    ``torch.load(mmap=True)``, the model built under ``with torch.device('meta')`` and
    ``load_state_dict(state_dict, assign=True)``. In both runs the meta model ends with the
    checkpoint's values on the CPU as Parameters (shardflow's ``assign=True`` moved them to
    the meta device before, and the values were lost), sharing the loaded tensors' memory as
    torch's does; the vanilla ``m.load_state_dict`` copies. shardflow reads torch's
    checkpoint with ``mmap=True`` too."""
    runs = []
    for use_sf in (False, True):
        mod, lines, where = _run("module_load_state_dict_tips", use_sf, tmp_path, monkeypatch, capsys)
        assert lines == []
        lib = shardflow if use_sf else torch
        saved = {k: v.numpy().copy() for k, v in lib.load(where / "checkpoint.pth").items()}
        assert list(saved) == [f"linears.{i}.{p}" for i in range(10) for p in ("weight", "bias")]
        for model in (mod.meta_m, mod.m):
            assert not any(p.is_meta for p in model.parameters())
            assert all(type(p).__name__ == "Parameter" and p.requires_grad for p in model.parameters())
            for k, v in model.state_dict().items():
                np.testing.assert_array_equal(v.numpy(), saved[k], err_msg=k)
        with lib.no_grad():
            mod.state_dict["linears.0.weight"].fill_(5.0)
        # assign=True: the module holds the loaded tensor; the copying load does not
        assert mod.meta_m.linears[0].weight.item() == 5.0 and mod.m.linears[0].weight.item() != 5.0
        runs.append((mod, where))
    (th, th_dir), _ = runs
    from_torch = shardflow.load(th_dir / "checkpoint.pth", mmap=True)
    for k, v in torch.load(th_dir / "checkpoint.pth").items():
        np.testing.assert_array_equal(from_torch[k].numpy(), v.numpy(), err_msg=k)


# ---------------------------------------------------------------- the profiler recipe
def _tables(lines):
    """The profiler tables in a printout: ``[(header cells, [(name, cells), ...]), ...]``
    (a Source Location row's continuation lines are left out)."""
    tables, i = [], 0
    while i < len(lines):
        if lines[i].startswith("---") and i + 2 < len(lines) and lines[i + 2].startswith("---"):
            header = re.split(r"\s{2,}", lines[i + 1].strip())
            rows, i = [], i + 3
            while not lines[i].startswith("---"):
                cells = re.split(r"\s{2,}", lines[i].strip())
                if lines[i].strip() and not lines[i].startswith(" " * 40):
                    rows.append((cells[0], cells[1:]))
                i += 1
            tables.append((header, rows))
        i += 1
    return tables


def test_profiler_recipe(tmp_path, monkeypatch, capsys):
    """profiler_recipe on a ResNet-18 (the stand-in: torchvision's layout, narrower) with a
    2x3x32x32 input: the execution-time tables (``record_function("model_inference")``,
    ``group_by_input_shape``), the memory tables (``profile_memory=True``, sorted by
    ``self_cpu_memory_usage`` / ``cpu_memory_usage``), ``export_chrome_trace``, the stack table
    (``with_stack=True``, ``group_by_stack_n=5``) and a schedule with ``on_trace_ready``
    writing a trace per cycle. Times differ (they are measured); compared: each table's
    columns are torch's (the stack table adds Source Location, which torch 2.13 on CPU leaves
    out: its events carry no stacks there), every row shardflow prints is an op name torch's
    profile of the same model has (``aten::conv2d`` ...; torch's inner ops such as
    ``aten::mkldnn_convolution`` have no shardflow counterpart, and shardflow's in-place
    ``add_`` records the ``aten::add`` it runs), the call counts of the rows both print
    (20 conv2d, 20 batch_norm, 17 relu_, ``ProfilerStep*`` 2 per cycle), the trace files. The
    recipe's last line, ``export_memory_timeline`` (deprecated in torch), raises
    NotImplementedError on shardflow, naming what to use instead."""
    results = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        modules = torchvision_modules(lib)
        if use_sf:
            with pytest.raises(NotImplementedError, match="export_memory_timeline.*profile_memory=True"):
                _run("profiler_recipe", True, tmp_path, monkeypatch, capsys, modules=modules)
            lines, where = capsys.readouterr().out.splitlines(), tmp_path / "sf"
            mod = None
        else:
            with pytest.warns(FutureWarning, match="export_memory_timeline"):
                mod, lines, where = _run("profiler_recipe", False, tmp_path, monkeypatch, capsys, modules=modules)
            assert (where / "memory_timeline.html").exists()
        results.append((mod, _tables(lines), where))
    (th, th_tables, th_dir), (_, sf_tables, sf_dir) = results
    assert len(th_tables) == len(sf_tables) == 8
    torch_keys = {e.key for e in th.prof.key_averages()} | {"model_inference", "ProfilerStep*"}
    for n, ((th_head, th_rows), (sf_head, sf_rows)) in enumerate(zip(th_tables, sf_tables)):
        if n == 5:  # the stack table (module docstring)
            assert sf_head == th_head + ["Source Location"] and "Source Location" not in th_head
        else:
            assert sf_head == th_head, n
        assert len(sf_rows) == min(len(th_rows), len(sf_rows)) > 0
        names = {name for name, _ in sf_rows}
        assert names <= torch_keys | {"aten::add"}, (n, names - torch_keys)
        calls = sf_head.index("# of Calls") - 1
        th_calls = {name: cells[calls] for name, cells in th_rows}
        for name, cells in sf_rows:
            # (table 1 has one row per input shape; torch's aten::add_ also counts each
            # training-mode BatchNorm's ``num_batches_tracked.add_(1)``, which shardflow
            # does without an op call)
            if name in th_calls and n != 1 and name != "aten::add_":
                assert cells[calls] == th_calls[name], (n, name)
    assert {"aten::conv2d", "aten::batch_norm", "model_inference"} <= {name for name, _ in sf_tables[0][1]}
    assert "Input Shapes" in sf_tables[1][0] and "CPU Mem" in sf_tables[3][0]
    assert [r for r in sf_tables[6][1] if r[0] == "ProfilerStep*"][0][1][-1] == "2"
    for where in (th_dir, sf_dir):
        for trace in ("trace.json", "trace_4.json", "trace_8.json"):
            events = json.loads((where / trace).read_text())["traceEvents"]
            assert any(e.get("name") == "aten::conv2d" for e in events), (where, trace)


# ---------------------------------------------------------------- tensorboard
def _shared_data_and_linear(mod, use_sf, records, seed=0):
    """The script's ``torch.randn`` from a shared NumPy stream and its ``torch.nn.Linear``
    starting from torch's initial weights (recorded in the torch run, loaded in the
    shardflow run, in construction order)."""
    lib = mod.torch
    draws = _Draws(lib, np.random.default_rng(seed), ["randn"])
    base = lib.nn.Linear

    class Linear(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if not use_sf:
                records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
            else:
                self.load_state_dict({k: lib.from_numpy(v) for k, v in records[len(loaded)].items()})
                loaded.append(self)

    loaded = []
    draws.nn = _Through(lib.nn)
    draws.nn.Linear = Linear
    mod.torch = draws


def _read_scalars(log_dir):
    """``[(tag, step, value), ...]`` from the event files under ``log_dir`` (TFRecord framing
    parsed here, records decoded with tensorboardX's Event proto)."""
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
    out = []
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            ev = event_pb2.Event()
            ev.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            out += [(v.tag, ev.step, v.simple_value) for v in ev.summary.value]
    return out


def test_tensorboard_with_pytorch_recipe(tmp_path, monkeypatch, capsys):
    """tensorboard_with_pytorch: ``SummaryWriter()`` (logging to ./runs/<date>_<host>/),
    ``add_scalar("Loss/train", loss, epoch)`` of a 0-d loss tensor over 10 SGD steps of
    Linear(1, 1) fitted to ``-5 * x + 0.1 * randn`` (shared draws, torch's initial weights),
    ``flush()``, ``close()``. The tensorboard package is not installed, so torch's
    ``torch.utils.tensorboard`` cannot import: the torch run gets a writer that records what
    it is given; shardflow's writes the event file, which is read back here: the ten logged
    losses are torch's (rtol 1e-5) at steps 0..9."""
    records, logged = [], []

    class RecordingWriter:
        def __init__(self, log_dir=None, **kwargs):
            pass

        def add_scalar(self, tag, value, global_step=None, **kwargs):
            logged.append((tag, global_step, float(value.detach() if hasattr(value, "detach") else value)))

        def flush(self):
            pass

        def close(self):
            pass

    stand_in = types.ModuleType("torch.utils.tensorboard")
    stand_in.SummaryWriter = RecordingWriter
    runs = []
    for use_sf in (False, True):
        modules = {} if use_sf else {"torch.utils.tensorboard": stand_in}
        mod, lines, where = _run("tensorboard_with_pytorch", use_sf, tmp_path, monkeypatch, capsys,
                                 modules=modules,
                                 after_imports=lambda m, _sf=use_sf: _shared_data_and_linear(m, _sf, records))
        assert lines == []
        runs.append((mod, where))
    (th, _), (sf, sf_dir) = runs
    assert len(records) == 1
    written = _read_scalars(sf_dir / "runs")
    assert [(t, s) for t, s, _ in written] == [("Loss/train", s) for s in range(10)]
    assert [(t, s) for t, s, _ in logged] == [("Loss/train", s) for s in range(10)]
    assert_close([v for *_, v in written], [v for *_, v in logged], "logged losses")
    assert logged[-1][2] < logged[0][2]
    for k, v in th.model.state_dict().items():
        assert_close(sf.model.state_dict()[k].numpy(), v.numpy(), f"Linear {k} after 10 steps")


# ---------------------------------------------------------------- dynamic quantization
def test_dynamic_quantization_recipe(tmp_path, monkeypatch, capsys):
    """dynamic_quantization: ``torch.quantization.quantize_dynamic(model, {nn.LSTM,
    nn.Linear}, dtype=torch.qint8)`` of a one-layer LSTM(8, 8) wrapper, the two printed
    modules, the saved state_dict sizes, and the mean absolute outputs of the float and the
    int8 model on a 20-step sequence. The inputs are shared draws and the LSTM starts from
    torch's weights. The printout is torch's line by line (``LSTM(8, 8)``, then
    ``DynamicQuantizedLSTM(8, 8)``: before, shardflow had no ``torch.quantization`` path and
    left the LSTM a float one, silently), except the file sizes: each framework's file
    format is its own, so only "int8 is smaller" is compared. The float and the int8
    outputs and states agree to 1e-6 (the int8 products are exact; float32 rounding
    apart)."""
    records = []

    def lstm_from_torch(lib, use_sf):
        base_init = lib.nn.LSTM.__init__

        def init(self, *args, **kwargs):
            base_init(self, *args, **kwargs)
            if type(self) is not lib.nn.LSTM:
                return
            if not use_sf:
                records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
            else:
                self.load_state_dict({k: lib.from_numpy(v) for k, v in records[0].items()})

        monkeypatch.setattr(lib.nn.LSTM, "__init__", init)

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        lstm_from_torch(lib, use_sf)

        def prepare(m):
            m.torch = _Draws(m.torch, np.random.default_rng(0), ["randn"])

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation of torch.ao.quantization
            mod, lines, _ = _run("dynamic_quantization", use_sf, tmp_path, monkeypatch, capsys,
                                 after_imports=prepare)
        runs.append((mod, lines))
        monkeypatch.undo()
    (th, th_out), (sf, sf_out) = runs
    assert len(records) == 1
    assert "  (lstm): DynamicQuantizedLSTM(8, 8)" in th_out
    size = re.compile(r"^model:  (fp32|int8)  \t Size \(KB\): [0-9.]+$")
    for out, mod in ((th_out, th), (sf_out, sf)):
        assert [bool(size.match(line)) for line in out].count(True) == 2
        assert mod.q < mod.f
    masked = [[line for line in out if not size.match(line) and not line.endswith("times smaller")]
              for out in (th_out, sf_out)]
    numbers = re.compile(r"[0-9]+\.[0-9]+")
    assert [numbers.sub("#", line) for line in masked[1]] == [numbers.sub("#", line) for line in masked[0]]
    for what in ("mag1", "mag2"):
        assert_close(getattr(sf, what), getattr(th, what), what)
    assert_close(sf.mag3, th.mag3, "mag3", rtol=1e-4)  # a mean of differences of near values
    for what in ("out1", "out2"):
        assert_close(getattr(sf, what).detach().numpy(), getattr(th, what).detach().numpy(), what, atol=1e-6)
    for h_sf, h_th in zip(sf.hidden2, th.hidden2):
        assert_close(h_sf.detach().numpy(), h_th.detach().numpy(), "int8 LSTM states", atol=1e-6)
    assert th.mag3 > 1e-4  # the int8 model is not the float one


# ---------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("name", ["saving_and_loading_a_general_checkpoint",
                                  "warmstarting_model_using_parameters_from_a_different_model"])
def test_checkpoint_recipes(tmp_path, monkeypatch, capsys, name):
    """saving_and_loading_a_general_checkpoint (``print(net)``; a dict of epoch, model and
    SGD-with-momentum state_dicts and loss saved to ``model.pt`` and loaded back into a new
    Net and optimizer, ``eval()`` / ``train()``) and warmstarting (NetA's state_dict loaded
    into NetB with ``strict=False``). Printouts are torch's; in each run the loaded model
    holds the saved values and the checkpoint's structure is torch's (keys, the optimizer's
    ``state`` / ``param_groups`` with every default); shardflow loads torch's ``model.pt``."""
    runs = []
    for use_sf in (False, True):
        mod, lines, where = _run(name, use_sf, tmp_path, monkeypatch, capsys)
        runs.append((mod, lines, where))
    (th, th_out, th_dir), (sf, sf_out, _) = runs
    assert sf_out == th_out
    if name.startswith("saving"):
        assert th_out[0] == "Net(" and len(th_out) == 8
        for mod in (th, sf):
            assert (mod.epoch, mod.loss) == (5, 0.4) and mod.model.training
            for k, v in mod.net.state_dict().items():
                np.testing.assert_array_equal(mod.model.state_dict()[k].numpy(), v.numpy())
        assert sf.checkpoint["optimizer_state_dict"] == th.checkpoint["optimizer_state_dict"]
        assert list(sf.checkpoint["model_state_dict"]) == list(th.checkpoint["model_state_dict"])
        loaded = shardflow.load(th_dir / "model.pt")
        assert loaded["optimizer_state_dict"] == th.checkpoint["optimizer_state_dict"]
        expected = th.net.state_dict()
    else:
        for mod in (th, sf):
            for k, v in mod.netA.state_dict().items():
                np.testing.assert_array_equal(mod.netB.state_dict()[k].numpy(), v.numpy())
        loaded = {"model_state_dict": shardflow.load(th_dir / "model.pt")}
        expected = th.netA.state_dict()
    for k, v in expected.items():
        np.testing.assert_array_equal(loaded["model_state_dict"][k].numpy(), v.numpy(), err_msg=k)


# ---------------------------------------------------------------- torch.utils.benchmark
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")


def _shape_of(lines):
    """A benchmark printout with what timing decides masked: numbers, colours, object
    addresses, the median/IQR/measurement-count lines of a Measurement (how many blocks
    fit the run time), IQR warnings, and runs of spaces and of dashes (column widths follow the
    numbers)."""
    out = []
    for line in lines:
        line = _ANSI.sub("", line)
        if re.match(r"\s*(Median:|IQR:|WARNING:|This )", line) or "measurement" in line:
            continue
        line = line.replace("shardflow.utils.benchmark.common", "torch.utils.benchmark.utils.common")
        line = re.sub(r"object at 0x[0-9a-f]+", "object at 0x", line)
        line = re.sub(r"\s+", " ", _NUMBER.sub("#", line)).strip()
        line = re.sub(r"-{3,}", "---", line)  # a table title's rule follows the columns' widths
        if re.fullmatch(r"#( us| ms| ns| s)?", line):
            continue  # a single measurement's time line
        out.append(line)
    return out


def test_benchmark_recipe(tmp_path, monkeypatch, capsys):
    """benchmark (torch.utils.benchmark): ``timeit.Timer`` and ``benchmark.Timer`` with
    ``from __main__ import ...`` setups and ``globals``, ``timeit(100)``, ``num_threads`` /
    ``label`` / ``sub_label`` in the Measurement's printout, ``blocked_autorange``, ``Compare``
    over sizes and thread counts, A/B results through pickle with ``env`` (one row per
    environment), ``trim_significant_figures``, ``colorize``, the round-tripped results'
    table, and ``Fuzzer``/``FuzzedParameter``/``FuzzedTensor`` inputs. Times differ, so the
    printouts are compared with the numbers and colours masked: every line, table header,
    row and separator is torch's; the fuzzed inputs' row labels (sizes and "(discontiguous)")
    are torch's exactly (the same draws from the seed). Before: Compare merged the A/B
    environments into one row, ignored ``colorize`` and trimming, and there was no Fuzzer."""
    runs = []
    for use_sf in (False, True):
        mod, lines, _ = _run("benchmark", use_sf, tmp_path, monkeypatch, capsys,
                             after_imports=lambda m: monkeypatch.setitem(sys.modules, "__main__", m))
        runs.append((mod, lines))
    (th, th_out), (sf, sf_out) = runs
    assert _shape_of(sf_out) == _shape_of(th_out)
    fuzzed = [line for line in th_out if re.match(r"\s+\d+\s+x \d+", line)]
    assert len(fuzzed) == 10 and any("(discontiguous)" in line for line in fuzzed)
    assert [line.split("|")[0] for line in sf_out if re.match(r"\s+\d+\s+x \d+", line)] == [
        line.split("|")[0] for line in fuzzed]
    assert sum("(environment B: bmm)" in line for line in sf_out) == 1
    assert any("\x1b[92m" in line for line in sf_out)  # colorize


def test_swap_tensors_recipe_first_sections(tmp_path, monkeypatch, capsys):
    """swap_tensors, its first two sections (the rest needs ``__torch_dispatch__`` wrapper
    subclasses; see the program's header): ``torch.utils.swap_tensors`` of an ``arange(2)``
    and an ``arange(3)`` printed in f-strings before and after, then Linear(1, 2)'s weight
    replaced by ``nn.Parameter(2 * mod.weight)`` while SGD keeps the old one (the printed
    ``param_groups[0]['params']`` list). The Linear starts from torch's weights; every
    printed line is torch's."""
    records, outs = [], []
    for use_sf in (False, True):
        _, lines, _ = _run("swap_tensors", use_sf, tmp_path, monkeypatch, capsys,
                           after_imports=lambda m, _sf=use_sf: _shared_data_and_linear(m, _sf, records))
        outs.append(lines)
    assert len(records) == 1
    th_out, sf_out = outs
    assert th_out[0] == "Before swapping, t1: tensor([0, 1]), t2: tensor([0, 1, 2])"
    assert th_out[1] == "After swapping, t1: tensor([0, 1, 2]), t2: tensor([0, 1])"
    assert sf_out == th_out


def _shared_layers(mod, use_sf, records, names=("Conv2d", "Linear"), draws=("rand",)):
    """The script's ``nn.<name>`` layers start from torch's initial weights (recorded in the
    torch run, loaded in the shardflow run, in construction order) and its ``torch.<draw>``
    functions draw from one shared NumPy stream."""
    lib = mod.torch
    view = _Through(mod.nn)
    for name in names:
        base = getattr(lib.nn, name)

        def init(self, *args, _base=base, **kwargs):
            _base.__init__(self, *args, **kwargs)
            if not use_sf:
                records.append({k: v.detach().numpy().copy() for k, v in self.state_dict().items()})
            else:
                self.load_state_dict({k: lib.from_numpy(v) for k, v in records[len(loaded)].items()})
                loaded.append(self)

        setattr(view, name, type(name, (base,), {"__init__": init}))
    loaded = []
    mod.nn = view
    mod.torch = _Draws(lib, np.random.default_rng(0), list(draws))


def test_what_is_state_dict_recipe(tmp_path, monkeypatch, capsys):
    """what_is_state_dict: ``print(net)``, each state_dict key with its ``size()``, and the
    SGD-with-momentum ``state_dict()`` entries (``state`` and ``param_groups`` with every
    default, ``0`` not ``0.0``, the parameter indices). Every printed line is torch's
    (``shardflow.Size`` read as ``torch.Size``)."""
    outs = [_run("what_is_state_dict", use_sf, tmp_path, monkeypatch, capsys)[1] for use_sf in (False, True)]
    assert any(line.startswith("param_groups \t [{'lr': 0.001, 'momentum': 0.9, 'dampening': 0") for line in outs[0])
    assert _as_torch(outs[1]) == outs[0]


def test_defining_a_neural_network_recipe(tmp_path, monkeypatch, capsys):
    """defining_a_neural_network: ``print`` of the MNIST Net (Conv2d, Dropout2d, Linear), then
    the second Net's forward (conv, relu, ``F.max_pool2d``, Dropout2d on a 4-D and, with
    torch's deprecation warning, on a 2-D input, ``flatten(start_dim=1)``, ``log_softmax``) on
    a ``torch.rand`` image (shared draws; layers from torch's weights). The printouts agree
    but for the result, which training-mode dropout makes random; the same net in eval mode
    gives torch's log-probabilities (1e-5), and its gradient of the first log-probability
    with respect to fc1's weight agrees (1e-4). (Not the convolutions' gradients: with
    some weights two values of a max-pool window are equal to float32 rounding, the
    frameworks' rounding then picks different maxima, and the gradient reaches a different
    position; measured: one window of 9216, conv2's weight gradient 4% apart.)"""
    records, runs = [], []
    for use_sf in (False, True):
        with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input"):
            mod, lines, _ = _run("defining_a_neural_network", use_sf, tmp_path, monkeypatch, capsys,
                                 after_imports=lambda m, _sf=use_sf: _shared_layers(m, _sf, records))
        runs.append((mod, lines))
    (th, th_out), (sf, sf_out) = runs
    assert len(records) == 2 * 4
    assert th_out[0] == "Net(" and th_out[-2].startswith("tensor([[")
    assert sf_out[:-2] == th_out[:-2]
    assert sf_out[-1].endswith("grad_fn=<LogSoftmaxBackward0>)") and th_out[-1].endswith("grad_fn=<LogSoftmaxBackward0>)")
    outs = []
    for mod in (th, sf):
        mod.my_nn.eval()
        out = mod.my_nn(mod.random_data)
        out[0, 0].backward()
        outs.append((out.detach().numpy(), mod.my_nn.fc1.weight.grad.numpy()))
    assert_close(outs[1][0], outs[0][0], "eval log-probabilities")
    assert_close(outs[1][1], outs[0][1], "fc1 weight gradient", rtol=1e-4, atol=1e-6)
