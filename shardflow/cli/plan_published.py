"""``shardflow plan published``: the virtual cluster against published scaling tables.

The planner's cost model, fed only the inputs the papers state -- the hardware (a simulated
profile, ``planner/profiles/*.json``), the model's dimensions, batch sizes and layouts --
predicts each row of:

* the Megatron-LM weak-scaling table (Narayanan et al., SC'21, Table 1: GPT 1.7B .. 1T on
  32 .. 3072 A100s; ``planner/published/megatron_sc21_table1.json``). The model is
  shardflow's own GPT (same architecture: pre-LN, 4h GELU MLP, learned positions, tied
  embeddings), traced at a few tiny sizes and extrapolated to the row's size
  (``planner/scaling.py``); mixed precision, activation recomputation, the row's TP x PP x
  DP, micro-batch size and interleaving. Predicted TFLOP/s per GPU = the paper's FLOP count
  (its equation, ``96 B s l h^2 (1 + s/6h + V/16lh)``) / predicted step time / GPUs, the
  paper's own definition;
* DLPerf's data-parallel throughput of ResNet-50 v1.5 and BERT-base on 1-32 V100s
  (``planner/published/dlperf_v100.json``): shardflow's ResNet-50 and a BERT-base
  pretraining model (MLM on 20 masked positions + next-sentence head, as the benchmark's).

Each row: predicted vs published and the relative error; where it misses by more than 20%,
the term that would have to change least to close the gap (compute, exposed communication,
bubble, optimizer), named with the factor it would need. Nothing is fitted to the tables.
"""

from __future__ import annotations

import json
import os

import numpy as np

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F
from shardflow.distributed.planner import Layout, RunSpec, estimate, load_profile, trace_model
from shardflow.distributed.planner.profile import PROFILE_DIR
from shardflow.models import GPT, GPTConfig
from shardflow.models.bert import BertConfig, BertModel
from shardflow.models.resnet import ResNet, ResNetConfig

__all__ = ["megatron_rows", "dlperf_rows", "format_report", "main", "gpt_trace"]

PUBLISHED = os.path.join(os.path.dirname(PROFILE_DIR), "published")


def _load(name):
    with open(os.path.join(PUBLISHED, name)) as f:
        return json.load(f)


# ----------------------------------------------------------------------------- models
def _ids(rng, b, t, v):
    return sf.tensor(rng.integers(0, v, (b, t)))


def gpt_trace(dropout: float = 0.1):
    """The extrapolating trace of shardflow's GPT (dims: batch, block_size, n_embd, n_head,
    vocab_size, n_layer)."""
    def build(d):
        sf.manual_seed(0)
        m = GPT(GPTConfig(block_size=d["block_size"], vocab_size=d["vocab_size"], n_layer=d["n_layer"],
                          n_head=d["n_head"], n_embd=d["n_embd"], dropout=dropout))
        rng = np.random.default_rng(0)
        x, y = _ids(rng, d["batch"], d["block_size"], d["vocab_size"]), _ids(rng, d["batch"], d["block_size"], d["vocab_size"])
        return m, (x, y), (lambda mod, inp: mod(*inp)[1]), d["batch"]

    return trace_model(build, dict(batch=1, block_size=8, n_embd=16, n_head=2, vocab_size=32, n_layer=1),
                       layer_dim="n_layer")


class BertPretraining(nn.Module):
    """BERT pretraining as DLPerf runs it: the encoder, the MLM head on the first
    ``predictions`` positions (the masked ones; which positions does not change the cost),
    the decoder tied to the word embeddings, and the next-sentence head on the first token."""

    def __init__(self, config: BertConfig, predictions: int):
        super().__init__()
        self.config, self.predictions = config, predictions
        H = config.hidden_size
        self.bert = BertModel(config)
        self.transform, self.transform_norm = nn.Linear(H, H), nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(H, config.vocab_size)
        self.decoder.weight = self.bert.embeddings.word_embeddings.weight
        self.pooler, self.nsp = nn.Linear(H, H), nn.Linear(H, 2)

    def forward(self, ids, mlm_labels, nsp_labels):
        x = self.bert(ids)  # (B, T, H)
        m = x[:, : self.predictions]  # (B, P, H)
        logits = self.decoder(self.transform_norm(F.gelu(self.transform(m))))  # (B, P, V)
        mlm = F.cross_entropy(logits.reshape(-1, logits.size(-1)), mlm_labels.reshape(-1))
        pooled = self.pooler(x[:, 0]).tanh()  # (B, H)
        return mlm + F.cross_entropy(self.nsp(pooled), nsp_labels)


def bert_trace():
    def build(d):
        sf.manual_seed(0)
        H = d["hidden"]
        cfg = BertConfig(vocab_size=d["vocab"], hidden_size=H, num_hidden_layers=d["n_layer"],
                         num_attention_heads=d["heads"], intermediate_size=4 * H,
                         max_position_embeddings=d["seq"])
        m = BertPretraining(cfg, d["predictions"])
        rng = np.random.default_rng(0)
        b = d["batch"]
        inputs = (_ids(rng, b, d["seq"], d["vocab"]), _ids(rng, b, d["predictions"], d["vocab"]),
                  sf.tensor(rng.integers(0, 2, (b,))))
        return m, inputs, (lambda mod, inp: mod(*inp)), b

    return trace_model(build, dict(batch=1, seq=8, hidden=16, heads=2, vocab=32, predictions=4, n_layer=1),
                       layer_dim="n_layer")


def resnet_trace():
    def build(d):
        sf.manual_seed(0)
        m = ResNet(ResNetConfig(depth=50, num_classes=d["classes"], image_size=d["image"]))
        rng = np.random.default_rng(0)
        x = sf.tensor(rng.standard_normal((d["batch"], 3, d["image"], d["image"])).astype(np.float32))
        y = sf.tensor(rng.integers(0, d["classes"], (d["batch"],)))
        return m, (x, y), (lambda mod, inp: F.cross_entropy(mod(inp[0]), inp[1])), d["batch"]

    return trace_model(build, dict(batch=1, image=64, classes=10), vary=["batch", "image", "classes"])


# ----------------------------------------------------------------------------- tables
def _diagnose(e, t_pub) -> str:
    """The term that would have to change least (relatively) to make the predicted step
    ``e.step_time`` equal the published ``t_pub``."""
    gap = t_pub - e.step_time
    terms = {"compute": e.compute, "exposed communication": e.comm_exposed,
             "optimizer": e.optimizer}
    if e.bubble_time:
        terms["pipeline bubble"] = e.bubble_time
    best = None
    for name, v in terms.items():
        if v <= 0:
            continue
        need = (v + gap) / v
        if need <= 0:
            continue
        score = abs(np.log(need))
        if best is None or score < best[0]:
            best = (score, name, need, v)
    if best is None:
        return "no single term can close the gap"
    _, name, need, v = best
    share = v / e.step_time * 100
    way = "slower" if need > 1 else "faster"
    return (f"{name} ({share:.0f}% of the predicted step) would have to be x{need:.2f} ({way}); "
            + {"compute": "the assumed kernel efficiencies (profile 'efficiency') are the suspect",
               "exposed communication": "the link bandwidths / overlap of the profile are the suspect",
               "pipeline bubble": "the schedule model is the suspect",
               "optimizer": "the optimizer's bytes per parameter are the suspect"}[name])


def megatron_rows(profile=None, rows=None) -> list:
    doc = _load("megatron_sc21_table1.json")
    prof = profile or load_profile(doc["profile"])
    mt = gpt_trace()
    # Megatron splits the embedding and the output layer over the vocabulary as well
    plan = GPT(GPTConfig(block_size=8, vocab_size=32, n_layer=1, n_head=2, n_embd=16)).tensor_parallel_plan(
        vocab_parallel=doc.get("vocab_parallel", False))
    s, V = doc["seq_length"], doc["vocab_size"]
    out = []
    for r in doc["rows"] if rows is None else [doc["rows"][i] for i in rows]:
        tp, pp, gpus, B, mbs = r["tp"], r["pp"], r["gpus"], r["batch"], r["mbs"]
        dp = gpus // (tp * pp)
        m = B // (dp * mbs)
        v = r["layers"] // (pp * r["vpp_layers"]) if r["vpp_layers"] else 1
        layout = Layout(dp, tp, pp, 0, m, True, "interleaved" if v > 1 else "1f1b", v,
                        grad_sync="bucketed" if r["ddp"] == "torch" else "after-backward")
        spec = RunSpec(mt, B, s, doc["precision"], doc["optimizer"], plan, "any",
                       prof.data["device"]["memory_gib"] * 2**30,
                       extra_dims=dict(block_size=s, n_embd=r["hidden"], n_head=r["heads"],
                                       vocab_size=V, n_layer=r["layers"]),
                       pp_scatter_gather=doc.get("pp_scatter_gather", False))
        e = estimate(spec, layout, prof)
        h, layers = r["hidden"], r["layers"]
        f_paper = 96 * B * s * layers * h * h * (1 + s / (6 * h) + V / (16 * layers * h))
        t_pub = f_paper / (r["tflops_per_gpu"] * 1e12 * gpus)
        pred = f_paper / (e.step_time * gpus) / 1e12
        rc_flops = e.model_flops * 4 / 3  # the trace's forward+backward, plus the recomputed forward
        out.append({"row": r, "layout": layout.describe(), "estimate": e, "pred_tflops": pred,
                    "pub_tflops": r["tflops_per_gpu"], "error": pred / r["tflops_per_gpu"] - 1,
                    "pred_pct_peak": pred / prof.peak_flops("mixed") * 1e12 * 100,
                    "flops_paper": f_paper, "flops_trace": rc_flops, "t_pub": t_pub,
                    "diagnosis": _diagnose(e, t_pub)})
    return out


def dlperf_rows(profile=None) -> list:
    doc = _load("dlperf_v100.json")
    prof = profile or load_profile(doc["profile"])
    traces = {"resnet50": (resnet_trace(), dict(image=224, classes=1000), 1),
              "bert_base": (bert_trace(), dict(seq=128, hidden=768, heads=12, vocab=30522,
                                               predictions=20, n_layer=12), 1)}
    out = []
    for tab in doc["tables"]:
        mt, dims, tokens = traces[tab["model"]]
        b = tab["batch_per_gpu"]
        one = one_est = None
        t1_pub = b / tab["rows"][0]["throughput"]
        for r in tab["rows"]:
            g = r["gpus"]
            spec = RunSpec(mt, b * g, tokens, "fp32", tab["optimizer"], None, "any",
                           prof.data["device"]["memory_gib"] * 2**30, extra_dims=dims)
            e = estimate(spec, Layout(g, 1, 1, grad_sync="bucketed"), prof)
            thr = b * g / e.step_time
            one = one or thr
            one_est = one_est or e
            t_pub = b * g / r["throughput"]
            # what grows with the GPU count: the step's time over the 1-GPU step's
            extra_pub, extra_pred = t_pub - t1_pub, e.step_time - one_est.step_time
            scaling = (f"the 1-GPU step is predicted within {abs(one_est.step_time / t1_pub - 1) * 100:.0f}%, so the "
                       f"term that grows with the GPUs is wrong: published, the {g}-GPU step is "
                       f"{extra_pub * 1e3:.0f} ms longer than the 1-GPU step; predicted {extra_pred * 1e3:.0f} ms "
                       f"(exposed communication {e.comm_exposed * 1e3:.0f} ms of {e.comm_total * 1e3:.0f} ms of "
                       f"all-reduce, overlap {prof.overlap(g):.2f} assumed): the exposed communication is "
                       f"under-predicted x{extra_pub / max(extra_pred, 1e-6):.1f} -- the overlap of the gradient "
                       "all-reduce with backward (and the inter-node bandwidth) in the profile are the suspects")
            out.append({"table": tab["title"], "unit": tab["unit"], "gpus": g, "estimate": e,
                        "pred": thr, "pub": r["throughput"], "error": thr / r["throughput"] - 1,
                        "pred_speedup": thr / one, "pub_speedup": r["speedup"],
                        "speedup_error": (thr / one) / r["speedup"] - 1, "t_pub": t_pub,
                        "diagnosis": _diagnose(e, t_pub), "scaling_diagnosis": scaling})
    return out


def format_report(mega: list, dl: list) -> str:
    lines = []
    if mega:
        doc = _load("megatron_sc21_table1.json")
        lines += [f"## {doc['title']}", "", "Profile: " + load_profile(doc["profile"]).label(), "",
                  "| params | layout (dp tp pp, micro-batches, schedule) | GPUs | batch | TFLOP/s/GPU published | "
                  "predicted | error | % of peak pub / pred | step s pub / pred | compute / comm / bubble % | "
                  "memory/GPU | FLOPs trace/paper |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for x in mega:
            r, e = x["row"], x["estimate"]
            T = e.step_time
            lines.append(
                f"| {r['params_b']}B | {x['layout']} | {r['gpus']} | {r['batch']} | {r['tflops_per_gpu']} | "
                f"{x['pred_tflops']:.0f} | {x['error'] * 100:+.0f}% | {r['pct_peak']} / {x['pred_pct_peak']:.0f} | "
                f"{x['t_pub']:.2f} / {T:.2f} | {e.compute / T * 100:.0f} / {e.comm_exposed / T * 100:.0f} / "
                f"{e.bubble_time / T * 100:.0f} | {e.memory / 2**30:.0f} GiB | {x['flops_trace'] / x['flops_paper']:.3f} |")
        lines.append("")
        for x in mega:
            if abs(x["error"]) > 0.2:
                lines.append(f"* {x['row']['params_b']}B misses by {x['error'] * 100:+.0f}%: {x['diagnosis']}")
        lines.append("")
    if dl:
        doc = _load("dlperf_v100.json")
        lines += [f"## {doc['title']}", "", "Profile: " + load_profile(doc["profile"]).label(), "",
                  "| model | GPUs | throughput published | predicted | error | speedup published | predicted | error | comm exposed % |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for x in dl:
            e = x["estimate"]
            lines.append(f"| {x['table']} | {x['gpus']} | {x['pub']:.1f} | {x['pred']:.1f} | {x['error'] * 100:+.0f}% | "
                         f"{x['pub_speedup']:.2f} | {x['pred_speedup']:.2f} | {x['speedup_error'] * 100:+.0f}% | "
                         f"{e.comm_share * 100:.1f} |")
        lines.append("")
        for x in dl:
            if abs(x["error"]) > 0.2:
                lines.append(f"* {x['table']}, {x['gpus']} GPUs misses by {x['error'] * 100:+.0f}%: {x['diagnosis']}")
            if abs(x["speedup_error"]) > 0.2:
                lines.append(f"* {x['table']}, {x['gpus']} GPUs: the speedup misses by "
                             f"{x['speedup_error'] * 100:+.0f}%: {x['scaling_diagnosis']}")
    return "\n".join(lines)


def main(argv) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="shardflow plan published", description=__doc__.split("\n")[0])
    p.add_argument("--table", choices=("megatron", "dlperf", "all"), default="all")
    p.add_argument("--json", help="also write the rows as JSON to this file")
    args = p.parse_args(argv)
    mega = megatron_rows() if args.table in ("megatron", "all") else []
    dl = dlperf_rows() if args.table in ("dlperf", "all") else []
    print(format_report(mega, dl))
    if args.json:
        def row(x):
            e = x["estimate"]
            return {**{k: v for k, v in x.items() if k not in ("estimate",)},
                    "step_time": e.step_time, "compute": e.compute, "comm_exposed": e.comm_exposed,
                    "bubble": e.bubble, "memory": e.memory}
        with open(args.json, "w") as f:
            json.dump({"megatron": [row(x) for x in mega], "dlperf": [row(x) for x in dl]}, f, indent=1)
    return 0
