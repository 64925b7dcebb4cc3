"""``torch.utils.tensorboard.SummaryWriter`` over tensorboardX: events written to tmp_path are
read back from the event file (TFRecord framing parsed here, records decoded with
tensorboardX's Event proto) and compared with what was logged."""

import struct

import numpy as np
import pytest

import shardflow
from shardflow.utils.tensorboard import SummaryWriter

tbx = pytest.importorskip("tensorboardX")
from tensorboardX.proto import event_pb2  # noqa: E402


def _read_events(log_dir):
    """Every Event in the event files under ``log_dir`` (TFRecord: u64 length, u32 crc, data,
    u32 crc)."""
    events = []
    for path in sorted(log_dir.rglob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            record = data[pos + 12:pos + 12 + length]
            pos += 12 + length + 4
            ev = event_pb2.Event()
            ev.ParseFromString(record)
            events.append((path.parent, ev))
    return events


def _values(events, tag):
    return [(ev.step, v) for _, ev in events for v in ev.summary.value if v.tag == tag]


def test_scalars_histogram_image_text_round_trip(tmp_path):
    with SummaryWriter(log_dir=str(tmp_path)) as w:
        assert w.get_logdir() == str(tmp_path)
        for step in range(3):
            w.add_scalar("loss", shardflow.tensor(1.5 - step), step)  # a 0-d tensor, as torch code passes
        w.add_scalar("lr", 0.25, global_step=7)
        data = shardflow.tensor(np.arange(100, dtype=np.float32))
        w.add_histogram("weights", data, 3)
        img = shardflow.tensor(np.linspace(0, 1, 3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5))
        w.add_image("sample", img, 4)
        w.add_text("note", "hello shardflow", 5)
    events = _read_events(tmp_path)
    assert [(s, v.simple_value) for s, v in _values(events, "loss")] == [(0, 1.5), (1, 0.5), (2, -0.5)]
    assert [(s, v.simple_value) for s, v in _values(events, "lr")] == [(7, 0.25)]
    [(step, hist)] = _values(events, "weights")
    assert step == 3
    h = hist.histo
    assert (h.min, h.max, h.num, h.sum) == (0.0, 99.0, 100, float(np.arange(100).sum()))
    assert sum(h.bucket) == 100
    [(step, image)] = _values(events, "sample")
    assert step == 4 and (image.image.height, image.image.width, image.image.colorspace) == (4, 5, 3)
    assert image.image.encoded_image_string.startswith(b"\x89PNG")
    [(step, text)] = _values(events, "note/text_summary")  # the tag torch writes too
    assert step == 5 and b"hello shardflow" in text.tensor.string_val[0]


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    w = SummaryWriter(str(tmp_path))
    for step in range(2):
        w.add_scalars("run", {"train": shardflow.tensor(float(step)), "val": 2.0 * step}, step)
    w.flush()
    w.close()
    events = _read_events(tmp_path)
    by_dir = {}
    for d, ev in events:
        for v in ev.summary.value:
            by_dir.setdefault(d.name, []).append((ev.step, v.tag, v.simple_value))
    assert by_dir["run_train"] == [(0, "run", 0.0), (1, "run", 1.0)]
    assert by_dir["run_val"] == [(0, "run", 0.0), (1, "run", 2.0)]


class _Net(shardflow.nn.Module):
    """The introyt TensorBoard tutorial's model, smaller: modules and functional ops."""

    def __init__(self):
        super().__init__()
        self.conv1 = shardflow.nn.Conv2d(1, 2, 3)
        self.fc1 = shardflow.nn.Linear(2 * 2 * 2, 3)

    def forward(self, x):
        x = shardflow.nn.functional.max_pool2d(shardflow.nn.functional.relu(self.conv1(x)), 2)
        return self.fc1(x.view(-1, 2 * 2 * 2))


def test_add_graph_writes_the_model_graph(tmp_path, capsys):
    """torch writes the TorchScript trace's graph; shardflow records one run op by op under
    torch's scope names (``Net/Conv2d[conv1]/...``), with IO nodes and output shapes."""
    from tensorboardX.proto import graph_pb2

    net = _Net()
    with SummaryWriter(str(tmp_path)) as w:
        w.add_graph(net, shardflow.rand(4, 1, 6, 6), verbose=True)
    assert "input/input.1 = IO Node()" in capsys.readouterr().out
    [graph] = [ev.graph_def for _, ev in _read_events(tmp_path) if ev.graph_def]
    g = graph_pb2.GraphDef()
    g.ParseFromString(graph)
    nodes = {n.name: n for n in g.node}
    assert [n.name for n in g.node][0] == "input/input.1" and g.node[-1].name == "output/output.1"
    conv = [n for n in g.node if n.name.startswith("_Net/Conv2d[conv1]/")]
    linear = [n for n in g.node if n.name.startswith("_Net/Linear[fc1]/")]
    assert conv and linear and conv[0].input == ["input/input.1"]
    relu = [n for n in g.node if n.op == "aten::relu"]
    assert len(relu) == 1 and relu[0].name.startswith("_Net/relu.") and relu[0].input == [conv[-1].name]
    out = nodes["output/output.1"]
    assert out.input == [linear[-1].name]
    assert [d.size for d in out.attr["_output_shapes"].list.shape[0].dim] == [4, 3]
    for node in g.node[1:-1]:  # every op node is reached from the input
        assert node.input, node.name
    assert not any(h for m in net.modules() for h in (m._forward_hooks, m._forward_pre_hooks))


def test_add_graph_refuses_a_dict_output_when_strict_and_needs_an_input(tmp_path):
    class DictOut(shardflow.nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    with SummaryWriter(str(tmp_path)) as w:
        with pytest.raises(RuntimeError, match="returned a dict.*use_strict_trace=False"):
            w.add_graph(DictOut(), shardflow.ones(2))
        w.add_graph(DictOut(), shardflow.ones(2), use_strict_trace=False)
        with pytest.raises(ValueError, match="input_to_model=None"):
            w.add_graph(DictOut())


def test_default_log_dir_is_under_runs_with_the_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        w.add_scalar("x", 1.0, 0)
    [d] = list((tmp_path / "runs").iterdir())
    assert d.name.endswith("_lr0.1") and list(d.glob("events.out.tfevents.*"))


def test_torch_import_path():
    import importlib

    mod = importlib.import_module("shardflow.utils.tensorboard")
    assert mod.SummaryWriter is SummaryWriter


def test_missing_tensorboardx_raises_with_the_install_line(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # what an uninstalled package does
    with pytest.raises(ImportError, match=r"pip install tensorboardX"):
        SummaryWriter(str(tmp_path))


def test_flush_writes_every_queued_event(tmp_path):
    """torch's ``flush`` blocks until the queued events are written; tensorboardX's flushes
    the file but leaves queued events to its logger thread, so the last steps were missing
    from the file right after ``flush()`` (the introyt training tutorial flushes once per
    epoch and never closes its writer)."""
    w = SummaryWriter(log_dir=str(tmp_path))
    try:
        for step in range(25):  # more than the queue's 10 and the first immediate write
            w.add_scalar("loss", float(step), step)
            w.add_scalars("pair", {"a": step, "b": -step}, step)
        w.flush()
        events = _read_events(tmp_path)
        assert [s for s, _ in _values(events, "loss")] == list(range(25))
        assert len(_values(events, "pair")) == 50
        w.add_scalar("loss", 99.0, 25)  # the writer still works after a flush, in the same file
        w.flush()
        events = _read_events(tmp_path)
        assert [s for s, _ in _values(events, "loss")] == list(range(26))
        assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 1
    finally:
        w.close()
    assert [s for s, _ in _values(_read_events(tmp_path), "loss")] == list(range(26))  # nothing twice


def test_scalar_tags_are_written_as_given(tmp_path):
    """torch writes ``add_scalar`` / ``add_scalars`` tags unchanged; tensorboardX's summary
    rewrote spaces to ``_`` (the introyt tutorials log ``'Training vs. Validation Loss'``)."""
    with SummaryWriter(log_dir=str(tmp_path)) as w:
        w.add_scalar("Loss per batch (train)", shardflow.tensor([2.5]), 1)  # one element: squeezed, as torch
        w.add_scalars("Training vs. Validation Loss", {"Training": 1.0, "Validation": shardflow.tensor(2.0)}, 3)
    events = _read_events(tmp_path)
    assert [(s, v.simple_value) for s, v in _values(events, "Loss per batch (train)")] == [(1, 2.5)]
    with SummaryWriter(log_dir=str(tmp_path / "img")) as w:
        w.add_image("Four Fashion-MNIST Images", shardflow.rand(3, 4, 5), 2)
        w.add_images("a batch of two", shardflow.rand(2, 3, 4, 5), 2)
        w.add_histogram("layer 1 weights", shardflow.rand(20), 2)
    tags = [v.tag for _, ev in _read_events(tmp_path / "img") for v in ev.summary.value]
    assert tags == ["Four Fashion-MNIST Images", "a batch of two", "layer 1 weights"]
    runs = {path.name: (ev.step, v.tag, v.simple_value) for path, ev in events for v in ev.summary.value
            if path != tmp_path}
    assert runs == {"Training vs. Validation Loss_Training": (3, "Training vs. Validation Loss", 1.0),
                    "Training vs. Validation Loss_Validation": (3, "Training vs. Validation Loss", 2.0)}


def test_float_images_are_scaled_and_clipped_like_torch(tmp_path):
    """torch: ``(x * 255).clip(0, 255)`` to uint8; tensorboardX cast without clipping, so a
    normalised image (values in [-1, 1], as the introyt tutorials log) had its negative values
    wrap around."""
    import io

    from PIL import Image

    x = np.array([[[-1.0, -0.2, 0.0], [0.5, 1.0, 1.5]]], np.float32)  # 1 x 2 x 3, CHW
    with SummaryWriter(str(tmp_path)) as w:
        w.add_image("img", shardflow.tensor(x), 0)
    [(_, v)] = _values(_read_events(tmp_path), "img")
    got = np.asarray(Image.open(io.BytesIO(v.image.encoded_image_string)))
    want = (x[0] * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, np.repeat(want[:, :, None], 3, axis=2))  # one channel shown as RGB
