"""``DataLoader``: batches from a dataset, optionally loaded by background worker processes.

Arguments are PyTorch's (``batch_size, shuffle, sampler, batch_sampler, num_workers,
collate_fn, pin_memory, drop_last, timeout, worker_init_fn, multiprocessing_context,
generator, prefetch_factor, persistent_workers``) with the same validation; ``pin_memory``
changes nothing (NumPy arrays live in host memory already), and without an accelerator each
new iterator warns as torch's does ("no accelerator is found").

Workers (``num_workers > 0``)
-----------------------------
Each worker is a forked process with its own task queue and its own result queue (one
queue per worker, so a worker killed mid-write cannot corrupt the others' channel). Batch
``i`` goes to worker ``i mod W`` (skipping workers whose iterable stream has ended); the
main process keeps ``prefetch_factor * num_workers`` batches in flight, so workers load the
next batches while the training step runs. Because each worker answers its tasks in order,
the main process knows which queue holds batch ``i`` and returns batches in sampler order.
Result queues have a feeder thread in the worker, so a finished batch never blocks the
worker from starting the next one.

Failure handling, never a silent stall: while waiting, the main process polls the worker's
liveness; a worker that died (segfault, OOM kill, ``os._exit``) raises torch's words
``RuntimeError("DataLoader worker (pid N) is killed by signal: Killed. (worker 1, exit code
-9, SIGKILL: ...")`` (or "exited unexpectedly with exit code 3."); an exception
inside a worker is re-raised in the main process with the worker id and the worker's
traceback; with ``timeout > 0`` a worker that is alive but produces nothing for ``timeout``
seconds raises naming the worker and the batch, after ``timeout`` (the hung worker is
terminated at once); ``timeout > 0`` with ``num_workers=0`` raises torch's AssertionError
when iterated. A worker whose parent disappears exits
within ``PARENT_POLL_S`` (a watchdog thread; also when it is blocked writing a batch).

Seeds: every epoch draws a base seed from ``generator`` (or the default generator); worker
``k`` seeds shardflow's default generator and ``random`` with ``base_seed + k``, and NumPy's
global generator with torch's hash of ``(k, base_seed)``, before ``worker_init_fn(k)`` runs,
so random augmentations differ between workers and repeat for a fixed seed regardless of
timing (the same values as torch's workers).

Auto-sharding across ranks (a shardflow addition; PyTorch has no such flag)
----------------------------------------------------------------------------
``auto_shard=None`` (default): when the world size is > 1, a data-parallel wrapper has
announced itself (``DistributedDataParallel`` calls ``shardflow.data.note_data_parallel()``)
and the user passed neither ``sampler`` nor ``batch_sampler``, the loader uses a
``DistributedSampler`` (shuffle as given, seed from ``generator`` or 0, ``drop_last`` as
given) and calls its ``set_epoch`` with a counter that advances on every ``iter(loader)``.
So a single-process script gains correct data parallelism unchanged under ``shardflow run
-n N``. ``auto_shard=True`` shards whenever the world size is > 1; ``auto_shard=False``
never shards. Iterable datasets are never sharded automatically (split them yourself with
the rank and ``get_worker_info()``). Evaluation loaders that must see the full set on
every rank pass ``auto_shard=False``.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import pickle
import queue
import random
import signal
import threading
import time
import traceback
import warnings
from dataclasses import dataclass

import numpy as np

from ..backend import cuda_is_available as _cuda_is_available
from ..backend import random as _random
from ..comm import profiling as _profiling
from . import _world
from ._worker_checks import checked_multiprocessing_context, worker_number_warning
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, DistributedSampler, RandomSampler, SequentialSampler, int64_seed

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_POLL_S = 0.2


@dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Inside a DataLoader worker: its id, the number of workers, its seed and dataset copy."""
    return _worker_info


# ----------------------------------------------------------------------------- fetchers
class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if getitems is not None else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last, batch_size):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn = auto_collation, collate_fn
        self.drop_last, self.batch_size = drop_last, batch_size
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in range(self.batch_size):
                try:
                    data.append(next(self.it))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < self.batch_size):
                self.ended = True
                raise StopIteration
        else:
            data = next(self.it)
        return self.collate_fn(data)


class _IterableEnd:
    """Marker a worker sends when its copy of an iterable dataset is exhausted."""


class _ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc: BaseException, worker_id: int | None, where: str):
        self.worker_id = worker_id
        self.where = where
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            pickle.dumps(type(exc))
            self.exc_type = type(exc)
        except Exception:  # noqa: BLE001 - a local exception class cannot travel
            self.exc_type = RuntimeError

    def reraise(self):
        who = "the main process" if self.worker_id is None else f"DataLoader worker process {self.worker_id}"
        # torch's message exactly ("Caught ValueError in DataLoader worker process 0.", then
        # the original traceback); what the worker was doing is a note, printed with the
        # traceback (session 37: it was inside the first line, which programs match)
        msg = f"Caught {self.exc_type.__name__} in {who}.\nOriginal {self.text}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)  # KeyError repr()s its argument; keep the text readable
        try:
            err = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - constructor with a different signature
            err = RuntimeError(msg)
        err.add_note(f"(The error came {self.where}.)")
        raise err


class _KeyErrorMessage(str):
    """A message whose repr is itself, so ``str(KeyError(msg))`` prints it as written (as
    PyTorch's ``KeyErrorMessage``)."""

    def __repr__(self):
        return self


def _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last, batch_size):
    if kind == "iterable":
        return _IterableFetcher(dataset, auto_collation, collate_fn, drop_last, batch_size)
    return _MapFetcher(dataset, auto_collation, collate_fn, drop_last)


def _seed_everything(base_seed: int, worker_id: int) -> None:
    """A worker's seeds, as torch's ``_worker_loop``: ``random`` and the default generator get
    ``base_seed + worker_id``; NumPy's global generator a 4-word seed hashed from
    ``(worker_id, base_seed)`` by NumPy's SeedSequence (the words torch's ``_generate_state``
    computes), so workers forked with one NumPy state draw different augmentations."""
    seed = base_seed + worker_id
    _random.manual_seed(seed % (2**63))
    random.seed(seed)
    words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    np.random.seed(np.random.SeedSequence(words).generate_state(4))


PARENT_POLL_S = 0.5  # how often a worker checks that the main process is still there


def _exit_with_parent(parent_pid: int) -> None:
    """A daemon thread that ends this worker (``os._exit``) as soon as the main process is
    gone, whatever it died of (``kill -9`` included). Needed beyond the main loop's own check:
    a worker whose result pipe is full is blocked in the queue's feeder thread, and a normal
    exit would wait for that thread forever. (A parent-death signal, ``prctl``, would fire
    when the *thread* that created the worker ends, which is not the main process's end.)"""
    def parent_alive() -> bool:
        if direct:
            return os.getppid() == parent_pid  # re-parented: the parent is gone
        try:  # started through a fork server: the main process is not our parent
            os.kill(parent_pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass
        return True

    def watch():
        while parent_alive():
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    direct = os.getppid() == parent_pid

    threading.Thread(target=watch, name="shardflow-worker-parent-watch", daemon=True).start()


def _worker_loop(kind, dataset, task_q, result_q, collate_fn, auto_collation, drop_last,
                 batch_size, seed, init_fn, worker_id, num_workers, parent_pid):
    """Body of a worker process: answer tasks in order until told to stop (``None``)."""
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    _exit_with_parent(parent_pid)

    def send(epoch, idx, payload):
        try:
            blob = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - unpicklable batch: report it, don't drop it
            blob = pickle.dumps(_ExceptionWrapper(e, worker_id, "while sending a batch"))
        result_q.put((epoch, idx, blob))

    try:
        _seed_everything(seed - worker_id, worker_id)  # seed is base_seed + worker_id
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last, batch_size)
    except Exception as e:  # noqa: BLE001
        send(None, None, _ExceptionWrapper(e, worker_id, "in worker_init_fn or its start-up"))
        return
    while True:
        try:
            task = task_q.get(timeout=5.0)
        except queue.Empty:
            continue  # a main process that is gone ends this worker (_exit_with_parent)
        if task is None:
            result_q.cancel_join_thread()
            return
        if task[0] == "reset":  # new epoch for an iterable dataset
            try:
                fetcher = _make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last, batch_size)
            except Exception as e:  # noqa: BLE001
                send(None, None, _ExceptionWrapper(e, worker_id, "while restarting the dataset iterator"))
            continue
        _, epoch, idx, index = task
        try:
            data = fetcher.fetch(index)
        except StopIteration:
            data = _IterableEnd
        except Exception as e:  # noqa: BLE001
            data = _ExceptionWrapper(e, worker_id, f"while loading batch {idx}")
        send(epoch, idx, data)


# ----------------------------------------------------------------------------- iterators
class _SingleProcessIter:
    def __init__(self, loader):
        if loader.timeout > 0:  # torch's type and words (it was ignored: no limit applied)
            raise AssertionError(
                f"_SingleProcessDataLoaderIter requires timeout == 0 (DataLoader(timeout="
                f"{loader.timeout}) bounds the wait for a worker process, and num_workers=0 "
                "loads in this process: pass num_workers > 0, or leave timeout out)")
        self.loader = loader
        self.index_iter = iter(loader._index_sampler()) if loader._kind == "map" else itertools.count()
        self.fetcher = _make_fetcher(
            loader._kind, loader.dataset, loader._auto_collation, loader.collate_fn,
            loader.drop_last, loader.batch_size,
        )

    def __iter__(self):
        return self

    def __next__(self):
        index = next(self.index_iter)
        return self.fetcher.fetch(index)

    def __len__(self):
        return len(self.loader)


class _MultiProcessIter:
    def __init__(self, loader):
        loader.check_worker_number_rationality()  # each time workers start, as torch
        self.loader = loader
        self.n = loader.num_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = mp.get_context("fork")
        elif isinstance(ctx, str):
            ctx = mp.get_context(ctx)
        self.prefetch = loader.prefetch_factor * self.n
        self.base_seed = loader._base_seed
        self.task_qs, self.result_qs, self.workers = [], [], []
        self._shutdown_done = False
        pid = os.getpid()
        for wid in range(self.n):
            tq, rq = ctx.Queue(), ctx.Queue()
            p = ctx.Process(
                target=_worker_loop,
                args=(loader._kind, loader.dataset, tq, rq, loader.collate_fn,
                      loader._auto_collation, loader.drop_last, loader.batch_size,
                      self.base_seed + wid, loader.worker_init_fn, wid, self.n, pid),
                daemon=True,
            )
            p.start()
            self.task_qs.append(tq)
            self.result_qs.append(rq)
            self.workers.append(p)
        self.epoch = 0
        self._reset()

    def _reset(self):
        """Start an epoch (again, for persistent workers)."""
        self.epoch += 1
        loader = self.loader
        if loader._kind == "map":
            self.index_iter = iter(loader._index_sampler())
        else:
            self.index_iter = itertools.count()
            for tq in self.task_qs:
                tq.put(("reset", self.epoch))
        self.send_idx = self.rcvd_idx = 0
        self.task_worker: dict[int, int] = {}
        self.active = [True] * self.n
        self.rr = itertools.cycle(range(self.n))
        self.exhausted = False
        for _ in range(self.prefetch):
            self._put_task()

    def _put_task(self):
        if self.exhausted or not any(self.active):
            return
        try:
            index = next(self.index_iter)
        except StopIteration:
            self.exhausted = True
            return
        for _ in range(self.n):
            w = next(self.rr)
            if self.active[w]:
                break
        self.task_qs[w].put(("task", self.epoch, self.send_idx, index))
        self.task_worker[self.send_idx] = w
        self.send_idx += 1

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def __next__(self):
        while True:
            if self.rcvd_idx >= self.send_idx:
                if not self.loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            idx = self.rcvd_idx
            w = self.task_worker.pop(idx)
            data = self._get(w, idx)
            self.rcvd_idx += 1
            if data is _IterableEnd:
                self.active[w] = False
                continue
            if isinstance(data, _ExceptionWrapper):
                self._shutdown()
                data.reraise()
            self._put_task()
            return data

    def _worker_died(self, w) -> RuntimeError:
        """torch's words first ("DataLoader worker (pid N) is killed by signal: Killed." /
        "... exited unexpectedly with exit code N."), then which worker and the fix."""
        p = self.workers[w]
        code = p.exitcode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
                head = f"is killed by signal: {signal.strsignal(-code)}."
            except ValueError:
                name, head = f"signal {-code}", f"is killed by signal: {-code}."
            how = f"exit code {code}, {name}"
        else:
            head, how = f"exited unexpectedly with exit code {code}.", f"exit code {code}"
        return RuntimeError(
            f"DataLoader worker (pid {p.pid}) {head} (worker {w}, {how}: it may have been killed "
            "for using too much memory, or crashed inside the dataset code; run with "
            "num_workers=0 to see the error in the main process)"
        )

    def _get(self, w, idx):
        q, p = self.result_qs[w], self.workers[w]
        timeout = self.loader.timeout
        start = time.monotonic()
        while True:
            wait = _POLL_S if timeout <= 0 else max(0.0, min(_POLL_S, start + timeout - time.monotonic()))
            try:
                epoch, i, blob = q.get(timeout=wait)
            except queue.Empty:
                if not p.is_alive():
                    try:  # it may have sent the batch just before exiting
                        epoch, i, blob = q.get(timeout=0.05)
                    except queue.Empty:
                        err = self._worker_died(w)
                        self._shutdown()
                        raise err from None
                elif timeout > 0 and time.monotonic() - start >= timeout:
                    self._shutdown(graceful=False)  # a hung worker would not read the stop
                    raise RuntimeError(
                        f"DataLoader timed out after {timeout} seconds waiting for batch {idx} from "
                        f"worker {w} (pid {p.pid}); the worker is alive but has produced nothing "
                        "(a hang in dataset.__getitem__, a lock, or I/O?). Raise timeout= or fix the "
                        "dataset; num_workers=0 runs it in the main process for debugging"
                    ) from None
                else:
                    continue
            payload = pickle.loads(blob)
            if epoch is None:  # fatal start-up error
                self._shutdown()
                payload.reraise()
            if epoch != self.epoch:
                continue  # a stale batch from an abandoned epoch (persistent workers)
            if i != idx:  # pragma: no cover - ordering invariant
                raise RuntimeError(f"DataLoader internal error: expected batch {idx}, got {i}")
            return payload

    def _shutdown(self, graceful: bool = True):
        """Stop the workers: each is asked to exit and given 2 s, then terminated. Not
        ``graceful`` (a ``timeout=`` expired: a worker is hung), they are terminated at once,
        so the error comes after ``timeout``, not 2 s later (session 37)."""
        if self._shutdown_done:
            return
        self._shutdown_done = True
        for tq, p in zip(self.task_qs, self.workers):
            if p.is_alive():
                try:
                    tq.put(None)
                except Exception:  # noqa: BLE001
                    pass
        deadline = time.monotonic() + (2.0 if graceful else 0.0)
        for p in self.workers:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
        for q in self.task_qs + self.result_qs:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# ----------------------------------------------------------------------------- DataLoader
class DataLoader:
    """Iterate over ``dataset`` in batches. See the module docstring for workers and sharding."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True, auto_shard: bool | None = None):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                f"num_workers option should be a non-negative integer, got {num_workers!r}; use 0 "
                "to load in the main process"
            )
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing; let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None"
            )
        if prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor < 1:
            raise ValueError(f"prefetch_factor must be >= 1, got {prefetch_factor}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer or None, got {batch_size!r}")

        self.dataset = dataset
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.multiprocessing_context = multiprocessing_context  # checked by the property
        self.persistent_workers = persistent_workers
        self.generator, self.in_order, self.auto_shard = generator, in_order, auto_shard
        self._kind = "iterable" if isinstance(dataset, IterableDataset) else "map"

        if self._kind == "iterable":
            if shuffle not in (None, False):
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                    f"shuffle={shuffle}; shuffle inside the dataset's __iter__ instead"
                )
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle; drop shuffle=True")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                    "and drop_last; give those to the batch sampler instead"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        self._user_sampler = sampler is not None or batch_sampler is not None
        self._shuffle = bool(shuffle)
        if sampler is None and self._kind == "map":
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and self._kind == "map":
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self._auto_collation = batch_sampler is not None or (self._kind == "iterable" and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._shard_epoch = 0
        self._shard_samplers = None
        self._iterator = None
        self.check_worker_number_rationality()  # torch warns when made and when workers start

    @property
    def multiprocessing_context(self):
        """The workers' ``multiprocessing`` context (a start-method name given is turned into
        its context); None: ``fork``."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        self._multiprocessing_context = checked_multiprocessing_context(context, self.num_workers)

    def check_worker_number_rationality(self) -> None:
        """Warn (torch's message) when ``num_workers`` exceeds the CPUs this process may use."""
        message = worker_number_warning(self.num_workers)
        if message is not None:
            warnings.warn(message, stacklevel=2)

    # -- sharding
    def _sharding(self) -> bool:
        if self._kind != "map" or self._user_sampler or self.auto_shard is False:
            return False
        rank, size = _world.world()
        if size <= 1:
            return False
        return self.auto_shard is True or _world.data_parallel_active()

    def _index_sampler(self):
        """The sampler whose items are fetched: the batch sampler when batching."""
        if self._sharding():
            if self._shard_samplers is None:
                seed = self.generator.initial_seed() if self.generator is not None else 0
                ds = DistributedSampler(self.dataset, shuffle=self._shuffle, seed=seed,
                                        drop_last=self.drop_last)
                bs = BatchSampler(ds, self.batch_size, self.drop_last) if self.batch_size else None
                self._shard_samplers = (ds, bs)
            ds, bs = self._shard_samplers
            return bs if bs is not None else ds
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        it = self._new_iter()
        rec = _profiling.current  # a profile records each batch as a ``data`` event
        return it if rec is None else rec.wrap_loader(it)

    def _new_iter(self):
        if self._sharding():
            self._index_sampler()
            self._shard_samplers[0].set_epoch(self._shard_epoch)
            self._shard_epoch += 1
        # torch draws the workers' base seed (an int64 random_() of the loader's generator)
        # when it makes an iterator: on every iter() but a persistent iterator's reuse
        reuse = (self.num_workers > 0 and self.persistent_workers and self._iterator is not None
                 and not self._iterator._shutdown_done)
        if not reuse:
            self._base_seed = int64_seed(self.generator)
            if self.pin_memory and not _cuda_is_available():  # torch warns on each new iterator
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device "
                              "pinned memory won't be used.", stacklevel=3)
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if not reuse:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset()
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._kind == "iterable":
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler())

    def __del__(self):
        it = getattr(self, "_iterator", None)
        if it is not None:
            it._shutdown()

