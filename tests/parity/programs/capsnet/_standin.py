"""Stand-ins for what gram-ai/capsule-networks imports besides torch (none installed here):
torchnet's ``Engine`` (its ``train`` / ``test`` loops and hooks as torchnet 0.0.4 runs them:
``optimizer.zero_grad()`` then ``optimizer.step(closure)``, the closure calling
``loss.backward()`` and ``on_forward``), its meters (``AverageValueMeter``,
``ClassErrorMeter(accuracy=True)``, ``ConfusionMeter(normalized=True)``), its
``TensorDataset([...]).parallel(batch_size, num_workers, shuffle)`` (list batches, the order
from a NumPy generator), visdom's loggers (recording what they are given, in ``LOGGED``),
torchvision's ``make_grid`` (``normalize=True, range=(lo, hi)``, the old keyword) and an MNIST
of synthetic label-dependent 28x28 images with the old ``train_data`` / ``train_labels``
attributes. Made per framework by :func:`modules`; the numbers are the framework's, the
stand-ins only move them around (in NumPy)."""

import types

import numpy as np


def modules(lib, n_train=12, n_test=8):
    logged = []
    rng = np.random.default_rng(0)

    def array(x):
        return np.array(x.detach().numpy() if hasattr(x, "detach") else x, copy=True)

    class Engine:
        def __init__(self):
            self.hooks = {}

        def hook(self, name, state):
            if name in self.hooks:
                self.hooks[name](state)

        def train(self, network, iterator, maxepoch, optimizer):
            state = {"network": network, "iterator": iterator, "maxepoch": maxepoch, "optimizer": optimizer,
                     "epoch": 0, "t": 0, "train": True}
            self.hook("on_start", state)
            while state["epoch"] < state["maxepoch"]:
                self.hook("on_start_epoch", state)
                for sample in state["iterator"]:
                    state["sample"] = sample
                    self.hook("on_sample", state)

                    def closure():
                        loss, output = state["network"](state["sample"])
                        state["output"] = output
                        state["loss"] = loss
                        loss.backward()
                        self.hook("on_forward", state)
                        state["output"] = None
                        state["loss"] = None
                        return loss

                    state["optimizer"].zero_grad()
                    state["optimizer"].step(closure)
                    self.hook("on_update", state)
                    state["t"] += 1
                state["epoch"] += 1
                self.hook("on_end_epoch", state)
            self.hook("on_end", state)
            return state

        def test(self, network, iterator):
            state = {"network": network, "iterator": iterator, "t": 0, "train": False}
            self.hook("on_start", state)
            for sample in state["iterator"]:
                state["sample"] = sample
                self.hook("on_sample", state)
                loss, output = state["network"](state["sample"])
                state["output"], state["loss"] = output, loss
                self.hook("on_forward", state)
                state["output"] = state["loss"] = None
                state["t"] += 1
            self.hook("on_end", state)
            return state

    class AverageValueMeter:
        def __init__(self):
            self.reset()

        def reset(self):
            self.values = []

        def add(self, value):
            self.values.append(float(value))

        def value(self):
            return float(np.mean(self.values)), float(np.std(self.values, ddof=1)) if len(self.values) > 1 else 0.0

    class ClassErrorMeter:
        def __init__(self, topk=(1,), accuracy=False):
            self.accuracy = accuracy
            self.reset()

        def reset(self):
            self.correct = self.n = 0

        def add(self, output, target):
            pred, target = array(output).argmax(1), array(target)
            self.correct += int((pred == target).sum())
            self.n += len(target)

        def value(self):
            acc = 100.0 * self.correct / self.n
            return [acc if self.accuracy else 100.0 - acc]

    class ConfusionMeter:
        def __init__(self, k, normalized=False):
            self.k, self.normalized = k, normalized
            self.reset()

        def reset(self):
            self.conf = np.zeros((self.k, self.k), np.int64)

        def add(self, predicted, target):
            np.add.at(self.conf, (array(target), array(predicted).argmax(1)), 1)

        def value(self):
            if self.normalized:
                conf = self.conf.astype(np.float32)
                return conf / conf.sum(1).clip(min=1e-12)[:, None]
            return self.conf

    class TensorDataset:
        def __init__(self, tensors):
            self.tensors = tensors

        def parallel(self, batch_size=1, num_workers=0, shuffle=False):
            return _Loader(self.tensors, batch_size, shuffle)

    class _Loader:
        """A DataLoader's part that matters here: fresh list batches on each pass (the
        program appends to them), reshuffled when ``shuffle``."""

        def __init__(self, tensors, batch_size, shuffle):
            self.tensors, self.batch_size, self.shuffle = tensors, batch_size, shuffle

        def __len__(self):
            return -(-len(self.tensors[0]) // self.batch_size)

        def __iter__(self):
            n = len(self.tensors[0])
            order = rng.permutation(n) if self.shuffle else np.arange(n)
            for i in range(0, n, self.batch_size):
                yield [t[lib.from_numpy(order[i:i + self.batch_size].copy())] for t in self.tensors]

    class _Logger:
        def __init__(self, kind, opts=None):
            self.kind, self.title = kind, (opts or {}).get("title")

        def log(self, *args):
            logged.append((self.title, [array(a) for a in args]))

    def make_grid(tensor, nrow=8, padding=2, normalize=False, range=None, pad_value=0):
        x = array(tensor)
        if normalize:
            lo, hi = range if range is not None else (x.min(), x.max())
            x = (x.clip(lo, hi) - lo) / max(hi - lo, 1e-5)
        n, c, h, w = x.shape
        x = np.repeat(x, 3, 1) if c == 1 else x
        xmaps, ymaps = min(nrow, n), int(np.ceil(n / nrow))
        grid = np.full((3, ymaps * (h + padding) + padding, xmaps * (w + padding) + padding), pad_value, x.dtype)
        for k in np.arange(n):
            r, col = divmod(k, xmaps)
            grid[:, r * (h + padding) + padding:(r + 1) * (h + padding), col * (w + padding) + padding:
                 (col + 1) * (w + padding)] = x[k]
        return lib.from_numpy(grid)

    class MNIST:
        def __init__(self, root, train=True, download=False):
            g = np.random.default_rng(1 if train else 2)
            n = n_train if train else n_test
            labels = g.permutation(np.arange(n) % 10)
            base = np.random.default_rng(3).random((10, 28, 28))
            images = (255 * (0.6 * base[labels] + 0.4 * g.random((n, 28, 28)))).astype(np.uint8)
            if train:
                self.train_data, self.train_labels = lib.from_numpy(images), lib.from_numpy(labels.astype(np.int64))
            else:
                self.test_data, self.test_labels = lib.from_numpy(images), lib.from_numpy(labels.astype(np.int64))

    def module(name, **names):
        m = types.ModuleType(name)
        m.__dict__.update(names)
        return m

    engine = module("torchnet.engine", Engine=Engine)
    meter = module("torchnet.meter", AverageValueMeter=AverageValueMeter, ClassErrorMeter=ClassErrorMeter,
                   ConfusionMeter=ConfusionMeter)
    logger = module("torchnet.logger", VisdomPlotLogger=_Logger, VisdomLogger=_Logger)
    dataset = module("torchnet.dataset", TensorDataset=TensorDataset)
    tnt = module("torchnet", engine=engine, meter=meter, logger=logger, dataset=dataset, LOGGED=logged)
    tnt.__path__ = []
    mnist = module("torchvision.datasets.mnist", MNIST=MNIST)
    datasets = module("torchvision.datasets", mnist=mnist, MNIST=MNIST)
    datasets.__path__ = []
    utils = module("torchvision.utils", make_grid=make_grid)
    tv = module("torchvision", datasets=datasets, utils=utils)
    tv.__path__ = []
    return {"torchnet": tnt, "torchnet.engine": engine, "torchnet.meter": meter, "torchnet.logger": logger,
            "torchnet.dataset": dataset, "torchvision": tv, "torchvision.datasets": datasets,
            "torchvision.datasets.mnist": mnist, "torchvision.utils": utils}
