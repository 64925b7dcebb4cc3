"""pytorch/tutorials' "Introduction to PyTorch" YouTube series
(``beginner_source/introyt/``), each run as a script on torch and, with its imports
rewritten, on shardflow, from the same ``manual_seed`` (no weight copying, no shared draws:
shardflow draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on every printed
line (see ``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

Left out: ``captumyt.py`` (Model Understanding with Captum: captum is not installed, and it
downloads a pretrained ResNet and images).
"""

import struct
import types

import numpy as np
import pytest

from .programs._harness import HERE, assert_close, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

INTROYT = HERE / "introyt"
SEED = 0


def _run(tmp_path, monkeypatch, capsys, name, modules=None):
    """Run ``introyt/<name>.py`` as a script in ``tmp_path/<th|sf>`` on torch then shardflow,
    each after ``manual_seed(SEED)``; ``modules(lib, use_sf)`` gives ``sys.modules`` entries
    (the torchvision stand-in ...). Returns ``[(module, printed lines, directory), ...]``."""
    import matplotlib
    import torch

    import shardflow

    matplotlib.use("Agg")  # plt.plot/imshow draw nothing on screen
    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        monkeypatch.chdir(where)
        lib.manual_seed(SEED)
        extra = {} if modules is None else modules(lib, use_sf)
        mod = run_script(INTROYT / f"{name}.py", use_sf, modules=extra)
        runs.append((mod, capsys.readouterr().out.splitlines(), where))
    return runs


def _mask_empty(lines, starts):
    """``torch.empty`` values are whatever memory held: each block of printed lines from a
    start index up to its closing ``])`` becomes one ``<empty>`` line (its shape is checked
    by the caller through the line count)."""
    out, i, starts = [], 0, set(starts)
    while i < len(lines):
        if i in starts:
            j = i
            while not lines[j].rstrip().endswith("])"):
                j += 1
            out.append(f"<empty {j - i + 1} lines>")
            i = j + 1
        else:
            out.append(lines[i])
            i += 1
    return out


def test_introyt_tensors_deeper_like_torch(tmp_path, monkeypatch, capsys):
    """tensors_deeper_tutorial.py as a script: ``empty`` / ``empty_like`` (values unset:
    compared by their line count only), ``zeros``/``ones``, ``manual_seed(1729)`` and
    ``rand`` (the same draws as torch, reseeded twice), ``*_like``, ``tensor`` of nested
    tuples/lists, int16/float64/int32 dtypes in the repr, scalar and tensor arithmetic with
    broadcasting, ``abs``/``ceil``/``floor``/``clamp``, ``sin``/``asin``, ``bitwise_xor``,
    ``eq``, ``max``/``mean``/``std``/``prod``/``unique``, ``cross`` (deprecated default dim),
    ``svd`` (``torch.return_types.svd(...)`` printed), in-place ``sin_``/``add_``/``mul_``,
    ``matmul(out=)`` and ``rand(out=)`` keeping the object, ``clone``/``detach``
    (``grad_fn=<CloneBackward0>``), the CPU branch of the device checks, ``unsqueeze`` /
    ``squeeze`` / ``unsqueeze_`` / ``reshape`` sizes, and the NumPy bridge both ways (shared
    memory). Every other printed line is torch's, numbers exactly."""
    (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "tensors_deeper_tutorial")
    empties = [1] + [i + 1 for i, line in enumerate(th_out) if line == "torch.Size([2, 2, 3])"][:2]
    th_masked = _mask_empty(th_out, empties)
    sf_empties = [1] + [i + 1 for i, line in enumerate(sf_out) if line == "shardflow.Size([2, 2, 3])"][:2]
    sf_masked = _mask_empty(sf_out, sf_empties)
    assert th_masked[1] == "<empty 3 lines>" and th_masked.count("<empty 5 lines>") == 2
    assert "torch.return_types.svd(" in th_out and "Sorry, CPU only." in th_out
    same_printout(sf_masked, th_masked, rtol=0, atol=0, what="tensors_deeper_tutorial")
    assert_close(sf.numpy_rand, th.numpy_rand, "numpy_rand (17 written through the tensor)")


def _table(lines):
    """Split out the profiler table: ``(lines before, table lines, lines after)``."""
    start = next(i for i, line in enumerate(lines) if line.startswith("---"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Self CPU time total:"))
    return lines[:start], lines[start:end + 1], lines[end + 1:]


def test_introyt_autograd_like_torch(tmp_path, monkeypatch, capsys):
    """autogradyt_tutorial.py as a script: ``linspace(requires_grad=True)``, ``sin`` plotted
    through ``detach()``, the ``grad_fn`` chain printed through ``next_functions``
    (``<AddBackward0 ...>``, ``(<MulBackward0 ...>, 0), (None, 0)``, ``AccumulateGrad``;
    addresses masked), ``backward()``; TinyModel (torch's initial Linear weights from the
    same seed), SGD, gradients accumulating over 5 backward passes and
    ``zero_grad(set_to_none=False)``, ``requires_grad = False``, ``no_grad`` as context and
    decorator, ``detach``; the autograd profiler table of 1000 ``(z / x) * y`` (same
    columns and widths as torch's, ``aten::div`` and ``aten::mul`` 1000 calls each; times
    are measured, so they and the row order are masked); ``backward(v)`` after doubling
    ``while y.data.norm() < 1000``; ``autograd.functional.jacobian`` / ``vjp``. Every other
    printed line is torch's to 4 printed decimals (atol 1e-4: a printed ``x.grad`` of
    ``2.0480e+02`` rounds alike; the losses are printed with 4 significant digits)."""
    (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "autogradyt_tutorial")
    th_before, th_table, th_after = _table(th_out)
    sf_before, sf_table, sf_after = _table(sf_out)
    assert th_table[:3] == sf_table[:3]  # separator and header, width for width
    # each row: its width, name and call count (the cells between are measured times)
    rows = lambda table: sorted((len(line), line.split()[0], line.split()[-1]) for line in table[3:-2])  # noqa: E731
    assert rows(sf_table) == rows(th_table) and len(rows(th_table)) == 2
    assert any(line.strip().startswith("aten::div") and line.strip().endswith("1000") for line in th_table)
    same_printout(sf_before, th_before, rtol=1e-5, atol=1e-4, what="autograd (before the profiler)")
    same_printout(sf_after, th_after, rtol=1e-5, atol=1e-4, what="autograd (after the profiler)")
    assert_close(sf.model.layer2.weight.detach().numpy(), th.model.layer2.weight.detach().numpy(),
                 "TinyModel.layer2 after one SGD step")
    assert_close(sf.model.layer2.weight.grad.numpy(), th.model.layer2.weight.grad.numpy(), "zeroed grad")
    assert_close(sf.x.grad.numpy(), th.x.grad.numpy(), "x.grad of the doubling")


def test_introyt_models_like_torch(tmp_path, monkeypatch, capsys):
    """modelsyt_tutorial.py as a script: ``print(tinymodel)`` (``Softmax(dim=None)``), every
    parameter printed (``Parameter containing:`` and torch's initial weights from the same
    seed), Linear on ``rand(1, 3)`` (``grad_fn=<AddmmBackward0>``), ``import
    torch.functional as F`` (the module path; shardflow had none), LeNet and LSTMTagger
    defined, MaxPool2d(3), BatchNorm1d over a (1, 4, 4) input
    (``grad_fn=<NativeBatchNormBackward0>``) and its mean, and two Dropout(p=0.4) draws
    (torch's masks from the same seed). Every printed line is torch's to 4 printed decimals;
    the normalised tensor's mean is rounding noise (-1.1176e-07 in torch, -1.1921e-07 here:
    atol 1e-6 for that line)."""
    (th, th_out, _), (sf, sf_out, _) = _run(tmp_path, monkeypatch, capsys, "modelsyt_tutorial")
    assert th_out[1] == "TinyModel(" and "  (softmax): Softmax(dim=None)" in th_out
    assert sum(line == "Parameter containing:" for line in th_out) == 8  # 4 + 2 + 2
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-6, what="modelsyt_tutorial")
    for k, v in th.tinymodel.state_dict().items():
        np.testing.assert_array_equal(sf.tinymodel.state_dict()[k].numpy(), v.numpy(), err_msg=k)


# ---------------------------------------------------------------- TensorBoard-logging programs
class _RecordingWriter:
    """torch's run: ``torch.utils.tensorboard`` cannot import here (the tensorboard package
    is not installed), so the torch run gets this writer, which records every call it is
    given; shardflow's run writes real event files, read back by the test."""

    def __init__(self, log_dir=None, **kwargs):
        self.log_dir = log_dir
        self.calls = [("__init__", log_dir)]
        _RecordingWriter.last = self

    def add_scalar(self, tag, value, global_step=None, **kwargs):
        self.calls.append(("add_scalar", tag, global_step, float(value)))

    def add_scalars(self, main_tag, values, global_step=None, **kwargs):
        self.calls.append(("add_scalars", main_tag, global_step, {k: float(v) for k, v in values.items()}))

    def add_image(self, tag, img, global_step=None, **kwargs):
        self.calls.append(("add_image", tag, np.array(img.numpy(), copy=True)))

    def add_graph(self, model, input_to_model=None, **kwargs):
        self.calls.append(("add_graph", type(model).__name__, tuple(input_to_model.shape)))

    def add_embedding(self, mat, metadata=None, label_img=None, **kwargs):
        self.calls.append(("add_embedding", np.array(mat.numpy(), copy=True), list(metadata),
                           np.array(label_img.numpy(), copy=True)))

    def flush(self):
        self.calls.append(("flush",))

    def close(self):
        self.calls.append(("close",))


def _tensorboard_standin():
    stand_in = types.ModuleType("torch.utils.tensorboard")
    stand_in.SummaryWriter = _RecordingWriter
    return stand_in


def _fashion_modules(sizes):
    from .programs._torchvision_standin import torchvision_modules

    def modules(lib, use_sf):
        mods = torchvision_modules(lib, sizes)
        if not use_sf:
            mods["torch.utils.tensorboard"] = _tensorboard_standin()
        return mods

    return modules


def _events(log_dir):
    """``{run directory relative to log_dir: [(tag, step, value), ...]}`` of shardflow's
    event files."""
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
    runs = {}
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        data, pos, out = path.read_bytes(), 0, []
        while pos < len(data):  # TFRecord framing: length, its crc, the record, its crc
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            ev = event_pb2.Event()
            ev.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            out += [(v.tag, ev.step, v.simple_value) for v in ev.summary.value]
        runs.setdefault(str(path.parent.relative_to(log_dir)), []).extend(out)
    return runs


def test_introyt_training_like_torch(tmp_path, monkeypatch, capsys):
    """trainingyt.py as a script: FashionMNIST (the torchvision stand-in: 40 + 12 synthetic
    images) through ``Compose([ToTensor(), Normalize])``, a shuffled ``DataLoader`` (the same
    order as torch's from the same seed) and ``next(iter(loader))`` with the class names
    printed by indexing a tuple with 0-d tensors, the LeNet-style GarmentClassifier (torch's
    initial weights from the same seed), CrossEntropyLoss on ``rand(4, 10)`` dummies, SGD
    with momentum for 2 epochs, the loss every 5 batches, validation under ``model.eval()``
    and ``no_grad`` with ``running_vloss += vloss`` (a tensor, formatted by ``'{}'.format``
    as its float), ``torch.save(model.state_dict(), path)`` of the best epoch, and a
    SummaryWriter: ``add_scalar('Loss/train', ...)`` and ``add_scalars`` (one run per key,
    ``<log_dir>/<main_tag>_<key>``, as torch lays them out). Every printed line is torch's
    (losses to rtol 1e-6: the dummy cross-entropy differs in its last float32 bit); what
    shardflow's event files hold is what the torch run logged; the saved state is the same."""
    import torch

    import shardflow

    (th, th_out, th_dir), (sf, sf_out, sf_dir) = _run(
        tmp_path, monkeypatch, capsys, "trainingyt", modules=_fashion_modules({"train": 40, "test": 12}))
    assert th_out[:2] == ["Training set has 40 instances", "Validation set has 12 instances"]
    assert sum(line.startswith("  batch ") for line in th_out) == 4
    same_printout(sf_out, th_out, rtol=1e-6, atol=0, what="trainingyt")
    logged = th.writer.calls
    assert logged[0][1].startswith("runs/fashion_trainer_")
    events = _events(sf_dir / "runs")
    run = sf.writer.log_dir.split("/")[-1]
    assert sorted(events) == [run, f"{run}/Training vs. Validation Loss_Training",
                              f"{run}/Training vs. Validation Loss_Validation"], sorted(events)
    th_scalars = [(c[1], c[2], c[3]) for c in logged if c[0] == "add_scalar"]
    assert [(t, s) for t, s, _ in events[run]] == [(t, s) for t, s, _ in th_scalars] == [
        ("Loss/train", s) for s in (5, 10, 15, 20)]
    assert_close([v for *_, v in events[run]], [v for *_, v in th_scalars], "Loss/train", rtol=1e-6)
    for key in ("Training", "Validation"):
        th_values = [(c[2], c[3][key]) for c in logged if c[0] == "add_scalars"]
        written = events[f"{run}/Training vs. Validation Loss_{key}"]
        assert [(t, s) for t, s, _ in written] == [("Training vs. Validation Loss", s) for s, _ in th_values]
        assert_close([v for *_, v in written], [v for _, v in th_values], key, rtol=1e-6)
    th_saved = sorted(p.name.rsplit("_", 1)[1] for p in th_dir.glob("model_*"))
    sf_saved = sorted(p.name.rsplit("_", 1)[1] for p in sf_dir.glob("model_*"))
    assert sf_saved == th_saved and th_saved  # the same best epochs
    th_state = torch.load(next(th_dir.glob(f"model_*_{th_saved[-1]}")))
    sf_state = shardflow.load(next(sf_dir.glob(f"model_*_{sf_saved[-1]}")))
    assert list(sf_state) == list(th_state)
    for k, v in th_state.items():
        assert_close(sf_state[k].numpy(), v.numpy(), f"saved {k}", rtol=1e-5, atol=1e-6)


def test_introyt1_like_torch(tmp_path, monkeypatch, capsys):
    """introyt1_tutorial.py ("Introduction to PyTorch") as a script: ``zeros`` and its dtype,
    int16 ``ones``, ``manual_seed(1729)`` draws (reseeded: r3 == r1), broadcasting
    arithmetic, ``abs`` / ``asin`` / ``det`` / ``svd`` (``torch.return_types.svd``) /
    ``std_mean`` / ``max``, LeNet printed and run on ``rand(1, 1, 32, 32)`` (torch's initial
    weights from the same seed), then CIFAR-10 (the torchvision stand-in: 40 + 12 synthetic
    images) through ``ToTensor`` + ``Normalize`` and shuffled ``DataLoader``s with
    ``num_workers=2`` (worker processes, as written; the batches are torch's, in torch's
    order), ``'%5s' % classes[labels[j]]``, the 3-channel Net trained 2 epochs by SGD with
    momentum (the loss printed with ``%.3f`` every 5 batches) and the accuracy from
    ``torch.max(outputs.data, 1)``. Every printed line is torch's (4 printed decimals to
    1e-4; the losses to their 3 printed decimals)."""
    from .programs._torchvision_standin import torchvision_modules

    (th, th_out, _), (sf, sf_out, _) = _run(
        tmp_path, monkeypatch, capsys, "introyt1_tutorial",
        modules=lambda lib, use_sf: torchvision_modules(lib, {"train": 40, "test": 12}))
    assert sum(line.startswith("[") and "loss:" in line for line in th_out) == 4
    assert th_out[-2] == "Finished Training" and th_out[-1].startswith("Accuracy of the network")
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-4, what="introyt1_tutorial")
    for k, v in th.net.state_dict().items():
        assert_close(sf.net.state_dict()[k].numpy(), v.numpy(), f"Net {k} after 2 epochs")


def _fashion_with_tensor_data(sizes):
    """The torchvision stand-in, with FashionMNIST's ``data`` (uint8 N x 28 x 28) and
    ``targets`` (int64) as tensors, as torchvision's MNIST family has them (the tutorial
    indexes them with ``randperm``)."""
    base = _fashion_modules(sizes)

    def modules(lib, use_sf):
        mods = base(lib, use_sf)
        datasets = mods["torchvision.datasets"]
        plain = datasets.FashionMNIST

        class FashionMNIST(plain):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.data = lib.from_numpy(np.ascontiguousarray(self.data))
                self.targets = lib.tensor(self.targets, dtype=lib.int64)

            def __getitem__(self, index):  # torchvision's: the image from the tensor's array
                from PIL import Image

                img, target = Image.fromarray(self.data[index].numpy(), mode="L"), int(self.targets[index])
                if self.transform is not None:
                    img = self.transform(img)
                if self.target_transform is not None:
                    target = self.target_transform(target)
                return img, target

        datasets.FashionMNIST = FashionMNIST  # (the module ``torchvision.datasets`` is too)
        return mods

    return modules


def test_introyt_tensorboard_like_torch(tmp_path, monkeypatch, capsys):
    """tensorboardyt_tutorial.py as a script: FashionMNIST (the stand-in: 40 + 12 images,
    ``data``/``targets`` tensors as torchvision's) through shuffled loaders with 2 workers,
    ``make_grid`` of the first batch logged by ``add_image`` (one PNG, torch's scaling of
    the grid: the values times 255, clipped), a LeNet-style Net trained one epoch with
    ``add_scalars('Training vs. Validation Loss', ...)`` every 5 batches (the validation
    pass under ``net.train(False)``), ``add_graph(net, images)``, and ``add_embedding`` of
    100 images picked by ``randperm`` (``data[perm][:n]``) with their class names and
    ``label_img``. torch's writer is a recorder here (tensorboard is not installed); shardflow
    writes the event files and the projector files, read back: the image, every logged loss
    (rtol 1e-6), the embedding's vectors, labels and order are what the torch run logged;
    the graph has the Net's module scopes, from the input to the output. The printout is
    torch's."""
    import io

    from PIL import Image
    from tensorboardX.proto import graph_pb2

    (th, th_out, _), (sf, sf_out, sf_dir) = _run(
        tmp_path, monkeypatch, capsys, "tensorboardyt_tutorial",
        modules=_fashion_with_tensor_data({"train": 40, "test": 12}))
    assert th_out == ["3", "Batch 5", "Batch 10", "Finished Training"]
    assert sf_out == th_out
    calls = th.writer.calls
    log_dir = sf_dir / "runs" / "fashion_mnist_experiment_1"
    event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")

    def raw_events(path):
        data, pos, out = path.read_bytes(), 0, []
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            ev = event_pb2.Event()
            ev.ParseFromString(data[pos + 12:pos + 12 + length])
            pos += 12 + length + 4
            out.append(ev)
        return out

    [main_file] = list(log_dir.glob("events.out.tfevents.*"))
    main_events = raw_events(main_file)
    # the image: torch's add_image scales a float grid by 255 and clips to uint8 (HWC)
    [grid] = [c[2] for c in calls if c[0] == "add_image"]
    [image] = [v.image for ev in main_events for v in ev.summary.value if v.tag == "Four Fashion-MNIST Images"]
    expected = (grid.transpose(1, 2, 0).astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
    expected = np.repeat(expected, 3, axis=2) if expected.shape[2] == 1 else expected  # grey shown as RGB
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(image.encoded_image_string))), expected)
    # the losses
    runs = _events(log_dir)
    th_scalars = [c for c in calls if c[0] == "add_scalars"]
    assert [c[2] for c in th_scalars] == [4, 9]
    for key in ("Training", "Validation"):
        written = runs[f"Training vs. Validation Loss_{key}"]
        assert [s for _, s, _ in written] == [4, 9]
        assert_close([v for *_, v in written], [c[3][key] for c in th_scalars], key, rtol=1e-6)
    # the graph
    [graph] = [ev.graph_def for ev in main_events if ev.graph_def]
    g = graph_pb2.GraphDef()
    g.ParseFromString(graph)
    names = [n.name for n in g.node]
    assert names[0] == "input/input.1" and names[-1] == "output/output.1"
    for scope in ("Net/Conv2d[conv1]/", "Net/MaxPool2d[pool]/", "Net/Conv2d[conv2]/", "Net/Linear[fc3]/"):
        assert any(n.startswith(scope) for n in names), scope
    assert [c[1:] for c in calls if c[0] == "add_graph"] == [("Net", (4, 1, 28, 28))]
    # the embedding: the same 100 images in the same order (randperm from the same seed)
    [(_, features, labels, label_img)] = [c for c in calls if c[0] == "add_embedding"]
    [tsv] = list(log_dir.rglob("tensors.tsv"))
    written = np.loadtxt(tsv, delimiter="\t")
    np.testing.assert_array_equal(written, features.astype(np.float64))
    [meta] = list(log_dir.rglob("metadata.tsv"))
    assert meta.read_text().splitlines() == labels
    assert label_img.shape == (40, 1, 28, 28) and list(log_dir.rglob("sprite.png"))
    assert calls[-1] == ("close",)
