"""``torch.utils.tensorboard.SummaryWriter``: PyTorch's writer API over tensorboardX's
event-file writer (the same TensorBoard event format; ``tensorboard --logdir runs`` reads
it). shardflow tensors are converted to NumPy arrays before each call; torch's argument
names are mapped where tensorboardX names them differently (``log_dir``, ``run_name``).

``add_graph`` records one run of the model op by op (``_graph.py``): tensorboardX draws a
graph by tracing with ``torch.jit.trace``, and shardflow has no TorchScript tracer.
"""

from __future__ import annotations

import time

import numpy as np

from ._tensorboardx import flush_to_disk, scalar_summary, tensorboardx, to_numpy


def _as_uint8(array):
    """torch's image scaling: a non-uint8 image is multiplied by 255 and clipped to [0, 255]
    (tensorboardX casts without clipping, so a normalised image's negative values wrapped
    around to bright pixels)."""
    array = np.asarray(array)
    if array.dtype == np.uint8:
        return array
    return (array.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


class SummaryWriter:
    """Write scalars, histograms, images, text ... to an event file in ``log_dir`` (default
    ``runs/<date>_<host><comment>``, as in PyTorch). Use as a context manager to close it."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        self._tbx = tensorboardx()
        self._writer = self._tbx.SummaryWriter(
            logdir=log_dir, comment=comment, purge_step=purge_step, max_queue=max_queue,
            flush_secs=flush_secs, filename_suffix=filename_suffix)
        self.log_dir = self._writer.logdir
        self._file_options = dict(max_queue=max_queue, flush_secs=flush_secs,
                                  filename_suffix=filename_suffix)
        self._scalars_writers: dict = {}  # add_scalars' per-tag runs

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """``new_style`` / ``double_precision`` (torch's tensor-proto encodings) are accepted;
        the value is written as tensorboardX's simple value, which TensorBoard reads alike.
        The tag is written as given, as torch does (tensorboardX's own ``add_scalar``
        would rewrite its spaces to ``_``)."""
        value = np.asarray(to_numpy(scalar_value)).squeeze()
        self._writer._get_file_writer().add_summary(scalar_summary(tag, value), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each ``tag`` goes to its own run, ``<log_dir>/<main_tag>_<tag>`` (PyTorch's layout;
        tensorboardX's own would be ``<main_tag>/<tag>``), under the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            run = f"{self.log_dir}/{main_tag.replace('/', '_')}_{tag}"
            fw = self._scalars_writers.get(run)
            if fw is None:
                fw = self._scalars_writers[run] = self._tbx.writer.FileWriter(
                    run, **self._file_options)
            summary = scalar_summary(main_tag, np.asarray(to_numpy(value)).squeeze())
            fw.add_summary(summary, global_step, walltime)

    def _add_summary(self, summary, tag, global_step, walltime):
        """Write a tensorboardX summary under ``tag`` as given: tensorboardX's summary
        functions rewrite a tag's spaces to ``_`` ("Four_Fashion-MNIST_Images"); torch
        keeps it."""
        for value in summary.value:
            value.tag = tag
        self._writer._get_file_writer().add_summary(summary, global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self._writer.default_bins
        summary = self._tbx.summary.histogram(tag, to_numpy(values), bins, max_bins=max_bins)
        self._add_summary(summary, tag, global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        summary = self._tbx.summary.image(tag, _as_uint8(to_numpy(img_tensor)), dataformats=dataformats)
        self._add_summary(summary, tag, global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        if isinstance(img_tensor, list):  # CHW or HWC images, stacked (torch's and tensorboardX's rule)
            if dataformats.upper() not in ("CHW", "HWC"):
                raise ValueError(f"add_images: a list of images must be CHW or HWC, got dataformats={dataformats!r}")
            img_tensor, dataformats = np.stack([to_numpy(t) for t in img_tensor], 0), "N" + dataformats
        summary = self._tbx.summary.image(tag, _as_uint8(to_numpy(img_tensor)), dataformats=dataformats)
        self._add_summary(summary, tag, global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        self._writer.add_figure(tag, figure, global_step, close, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._writer.add_text(tag, text_string, global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        self._writer.add_video(tag, to_numpy(vid_tensor), global_step, fps, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._writer.add_audio(tag, to_numpy(snd_tensor), global_step, sample_rate, walltime)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        self._writer.add_pr_curve(tag, to_numpy(labels), to_numpy(predictions), global_step,
                                  num_thresholds, to_numpy(weights), walltime)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        self._writer.add_embedding(to_numpy(mat), metadata, to_numpy(label_img), global_step, tag,
                                   metadata_header)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None):
        self._writer.add_mesh(tag, to_numpy(vertices), to_numpy(colors), to_numpy(faces),
                              config_dict, global_step, walltime)

    def add_custom_scalars(self, layout):
        self._writer.add_custom_scalars(layout)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        if hparam_domain_discrete is not None:
            raise NotImplementedError(
                "add_hparams(hparam_domain_discrete=...) is not supported: tensorboardX, which "
                "writes shardflow's event files, has no discrete-domain field; leave it None")
        self._writer.add_hparams(to_numpy(hparam_dict), to_numpy(metric_dict), name=run_name,
                                 global_step=global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """The model's graph for TensorBoard's GRAPHS tab: one run of ``model`` on
        ``input_to_model`` with every op recorded under its module scope (``_graph.py``;
        torch traces with ``torch.jit.trace``, which shardflow does not have: the node names
        follow torch's scopes, the ops are shardflow's). ``verbose=True`` prints the nodes
        (torch prints its TorchScript graph)."""
        from tensorboardX.proto import event_pb2

        from ._graph import graph_def

        graph = graph_def(model, input_to_model, use_strict_trace=use_strict_trace)
        if verbose:
            for node in graph.node:
                print(f"{node.name} = {node.op}({', '.join(node.input)})")
        self._writer._get_file_writer().add_event(event_pb2.Event(graph_def=graph.SerializeToString()))

    def flush(self) -> None:
        """Every event logged so far is on disk when this returns, as with torch's writer
        (``flush_to_disk``: tensorboardX's own flush leaves queued events to its thread)."""
        for fw in list((self._writer.all_writers or {}).values()) + list(self._scalars_writers.values()):
            flush_to_disk(fw)

    def close(self) -> None:
        self._writer.close()
        for fw in self._scalars_writers.values():
            fw.close()
        self._scalars_writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
