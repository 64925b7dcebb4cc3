"""Vision-transformer and modern-CNN code as people copy it (timm's blocks, microsoft's Swin,
facebookresearch's ConvNeXt, an MLP-Mixer, lucidrains' ViT without einops), run as scripts on
torch and, with their imports rewritten, on shardflow, from the same ``manual_seed`` (no
weight copying, no shared draws: stochastic depth's ``bernoulli_`` / ``torch.rand`` masks and
dropout in training mode are shardflow's own draws of torch's numbers), compared on every
printed line, the warnings, and the trained state (docs/COMPAT.md, "Public programs").

* ``programs/timm_vit.py``: DropPath, LayerScale (also its in-place ``mul_`` form),
  PatchEmbed, a cls-token ViT initialised by ``trunc_normal_`` through ``self.apply``,
  no-weight-decay groups, AdamW, ``clip_grad_norm_`` and a warm-up + cosine ``LambdaLR``;
  then MAE-style fine-tuning from the checkpoint it saved (``interpolate_pos_embed``).
* ``programs/swin_tiny.py``: two Swin stages (shifted windows by ``torch.roll`` with the
  sliced ``masked_fill`` mask, the relative position bias table and its ``meshgrid`` index
  buffer, PatchMerging), optionally ``torch.utils.checkpoint`` on the last stage.
* ``programs/convnext_mixer_vit.py``: ConvNeXt (channels-first LayerNorm by hand, depthwise
  7x7 convs, NumPy cosine lr array), MLP-Mixer (transpose and ``Conv1d`` token MLPs, Nesterov
  SGD + CosineAnnealingLR), lucidrains' ViT (``chunk`` + ``map(lambda ...)``, dropout 0.1 in
  training) and SimpleViT (2-d sin-cos position embedding), Adam + StepLR.

Tolerance: printed numbers (4 or 6 decimals) to rtol 1e-5 / atol 1.1e-6 (one unit in the
sixth decimal: measured, the gradient norms of timm_vit's first two steps print 3.836091 vs
3.836092); trained weights rtol 1e-4, atol 1e-5 (measured: under 1e-6 except one entry of
lucidrains' ViT, see ``VIT_ATOL``).
"""

import warnings

import pytest
import torch

import shardflow

from .programs._harness import HERE, assert_close, assert_same_state, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

# lucidrains' ViT pools the cls token, so its last feed-forward's weight gradient comes from
# token 0 alone; for one entry (``layers.1.1.net.4.weight[8, 10]``) it is -5.8e-9 at the first
# step (torch; shardflow -6.2e-9: rounding of a near-cancelling sum, the row's largest entry is
# 1.9e-2). That is under Adam's eps (1e-8), so the first step moves it by lr * |g| / (|g| + eps),
# 0.367 lr vs 0.383 lr: 1.65e-5 apart (measured), kept through the later steps.
VIT_ATOL = 5e-5


def _both(capsys, tmp_path, monkeypatch, name, argv=()):
    """The script run on torch then on shardflow from ``manual_seed(0)``, each in a working
    directory of its own: the two modules' globals, after the printouts and warnings are compared."""
    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / name / "_".join(argv) / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        monkeypatch.chdir(where)
        lib.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            script = run_script(HERE / name, use_sf, list(argv))
        runs.append((script, capsys.readouterr().out.splitlines(),
                     [(w.category, str(w.message)) for w in caught]))
    (th_model, th_out, th_warned), (sf_model, sf_out, sf_warned) = runs
    assert sf_warned == th_warned, (name, argv)
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-6, what=f"{name} {' '.join(argv)}")
    return th_model, sf_model, th_out



def test_timm_vit_trains_saves_and_finetunes_like_torch(capsys, tmp_path, monkeypatch):
    """timm_vit.py (LayerScale out of place, then in place): ``print(model)`` (LayerScale,
    DropPath ``extra_repr``), parameter count, state-dict keys, weight-decay group sizes, every
    step's loss, gradient norm and lr, the eval line, the trained weights, the saved checkpoint
    (AdamW state, reloaded into a new AdamW), and the fine-tuned model loaded from it (head
    keys deleted, ``pos_embed`` resized by bicubic ``interpolate``, ``load_state_dict(strict=False)``
    printed)."""
    for argv in ((), ("--inplace-ls",)):
        th, sf, out = _both(capsys, tmp_path, monkeypatch, "timm_vit.py", argv)
        assert "groups: [26, 10] [0.0, 0.05]" in out, out
        assert any("(drop_path2): DropPath(drop_prob=0.200)" in line for line in out)
        assert "Position interpolate from 4x4 to 6x6" in out and "resumed optimizer: tensor(4.) 0.0001" in out
        assert_same_state(sf.model, th.model, f"timm_vit {argv}")
        assert_same_state(sf.finetuned, th.finetuned, f"timm_vit fine-tuned {argv}")
        where = tmp_path / "timm_vit.py" / "_".join(argv)
        th_saved = torch.load(where / "th" / "vit_checkpoint.pth")
        sf_saved = shardflow.load(where / "sf" / "vit_checkpoint.pth")
        assert sf_saved["scheduler"] == th_saved["scheduler"]
        assert sf_saved["optimizer"]["param_groups"] == th_saved["optimizer"]["param_groups"]
        for i, state in th_saved["optimizer"]["state"].items():
            for key in ("step", "exp_avg", "exp_avg_sq"):
                assert_close(sf_saved["optimizer"]["state"][i][key].numpy(), state[key].numpy(), f"state {i} {key}",
                             rtol=1e-4, atol=1e-8)


def test_swin_trains_like_torch(capsys, tmp_path, monkeypatch):
    """swin_tiny.py, without and with ``checkpoint`` on the last stage: ``print(model)`` with
    the ``extra_repr``s, buffer names, relative position index and shifted-window mask values,
    weight-decay group sizes, every batch's lr / loss / gradient norm, Acc@1 lines, trained
    weights."""
    for argv in ((), ("--checkpoint",)):
        th, sf, out = _both(capsys, tmp_path, monkeypatch, "swin_tiny.py", argv)
        assert "index: tensor([24, 23, 22, 21, 17, 16])" in out
        assert "buffers: ['layers.0.blocks.0.attn.relative_position_index', 'layers.0.blocks.1.attn_mask', " \
               "'layers.0.blocks.1.attn.relative_position_index', 'layers.1.blocks.0.attn.relative_position_index', " \
               "'layers.1.blocks.1.attn.relative_position_index']" in out
        assert_same_state(sf.model, th.model, f"swin {argv}")


def test_convnext_mixer_lucidrains_vit_train_like_torch(capsys, tmp_path, monkeypatch):
    """convnext_mixer_vit.py for each ``--arch``: ``print(model)``, parameter count, first
    state-dict keys, 4 steps' loss / lr / output row, the eval loss and predictions, trained
    weights."""
    for arch in ("convnext", "mixer", "mixer_conv", "vit", "simple_vit"):
        th, sf, out = _both(capsys, tmp_path, monkeypatch, "convnext_mixer_vit.py", ("--arch", arch))
        assert sum(line.startswith("step ") for line in out) == 4, out
        assert_same_state(sf.model, th.model, arch, atol=VIT_ATOL if arch == "vit" else 1e-5)
