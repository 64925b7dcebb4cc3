# ruff: noqa: E501, E701, F401, I001, E711, E731, E741  (the program's own style, kept)
"""
BlinkDL/ChatRWKV ``RWKV_in_150_lines.py`` (Apache-2.0): RWKV-4 as an RNN, a
``torch.jit.ScriptModule`` whose ``time_mixing`` / ``channel_mixing`` are
``@torch.jit.script_method``s: the weights read by ``torch.load`` into nested
``types.SimpleNamespace``s (``.time_`` entries squeezed, ``time_decay`` made
``-torch.exp(...)``), token-shift mixing, the numerically safe WKV recurrence
(``torch.maximum``, ``torch.exp`` of differences, the state rows written in place, ``-1e30``
for minus infinity), ``state == None`` on the first call, ``F.layer_norm`` with a namespace's
weight and bias, squared-ReLU channel mixing, and ``sample_logits`` (NumPy top-p over
``F.softmax(out).numpy()``, ``np.random.choice``). Changed: the 430M checkpoint is a tiny
random one written by the program itself in the checkpoint's key names, the tokenizer is
token ids; then the same model is run over a whole sequence in one pass (a ``for`` loop of
the recurrence under autograd) and trained 4 Adam steps, the gradient flowing through
``torch.exp`` / ``torch.maximum`` of the recurrence.
"""
import types
import numpy as np
import torch
from torch.nn import functional as F

np.set_printoptions(precision=4, suppress=True, linewidth=200)

args = types.SimpleNamespace()
args.MODEL_NAME = 'rwkv_tiny'
args.n_layer = 2
args.n_embd = 16
vocab = 30


def make_checkpoint(path):
    """(added) random RWKV-4 weights in the published checkpoint's key names"""
    C, w = args.n_embd, {}
    w['emb.weight'] = torch.randn(vocab, C) * 0.5
    for i in range(args.n_layer):
        p = f'blocks.{i}.'
        if i == 0:
            w[p + 'ln0.weight'], w[p + 'ln0.bias'] = 1 + 0.1 * torch.randn(C), 0.1 * torch.randn(C)
        for ln in ('ln1', 'ln2'):
            w[p + ln + '.weight'], w[p + ln + '.bias'] = 1 + 0.1 * torch.randn(C), 0.1 * torch.randn(C)
        w[p + 'att.time_decay'] = torch.linspace(-3, 1, C)
        w[p + 'att.time_first'] = torch.full((C,), 0.3) + 0.1 * torch.randn(C)
        for m in ('k', 'v', 'r'):
            w[p + f'att.time_mix_{m}'] = torch.rand(1, 1, C)
        for m in ('key', 'value', 'receptance', 'output'):
            w[p + f'att.{m}.weight'] = torch.randn(C, C) / C ** 0.5
        for m in ('k', 'r'):
            w[p + f'ffn.time_mix_{m}'] = torch.rand(1, 1, C)
        w[p + 'ffn.key.weight'] = torch.randn(4 * C, C) / C ** 0.5
        w[p + 'ffn.receptance.weight'] = torch.randn(C, C) / C ** 0.5
        w[p + 'ffn.value.weight'] = torch.randn(C, 4 * C) / (4 * C) ** 0.5
    w['ln_out.weight'], w['ln_out.bias'] = torch.ones(C), torch.zeros(C)
    w['head.weight'] = torch.randn(vocab, C) / C ** 0.5
    torch.save(w, path)


class RWKV_RNN(torch.jit.ScriptModule):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.eval()  # set torch to inference mode

        w = torch.load(args.MODEL_NAME + '.pth', map_location='cpu')
        for k in w.keys():
            if '.time_' in k: w[k] = w[k].squeeze()
            if '.time_decay' in k: w[k] = -torch.exp(w[k].float())  # the real time decay is like e^{-e^x}
            else: w[k] = w[k].float()  # convert to f32 type

        self.w = types.SimpleNamespace()  # set self.w from w
        self.w.blocks = {}
        for k in w.keys():  # example: "blocks.0.att.time_first" => self.w.blocks[0].att.time_first
            parts = k.split('.')
            last = parts.pop()
            here = self.w
            for p in parts:
                if p.isdigit():
                    p = int(p)
                    if p not in here: here[p] = types.SimpleNamespace()
                    here = here[p]
                else:
                    if not hasattr(here, p): setattr(here, p, types.SimpleNamespace())
                    here = getattr(here, p)
            setattr(here, last, w[k])

    def layer_norm(self, x, w):
        return F.layer_norm(x, (self.args.n_embd,), weight=w.weight, bias=w.bias)

    @torch.jit.script_method
    def channel_mixing(self, x, state, i: int, time_mix_k, time_mix_r, kw, vw, rw):
        xk = x * time_mix_k + state[5*i+0] * (1 - time_mix_k)
        xr = x * time_mix_r + state[5*i+0] * (1 - time_mix_r)
        state[5*i+0] = x
        r = torch.sigmoid(rw @ xr)
        k = torch.square(torch.relu(kw @ xk))  # square relu, primer paper
        return r * (vw @ k)

    @torch.jit.script_method
    def time_mixing(self, x, state, i: int, time_mix_k, time_mix_v, time_mix_r, time_first, time_decay, kw, vw, rw, ow):
        xk = x * time_mix_k + state[5*i+1] * (1 - time_mix_k)
        xv = x * time_mix_v + state[5*i+1] * (1 - time_mix_v)
        xr = x * time_mix_r + state[5*i+1] * (1 - time_mix_r)
        state[5*i+1] = x
        r = torch.sigmoid(rw @ xr)
        k = kw @ xk
        v = vw @ xv

        aa = state[5*i+2]
        bb = state[5*i+3]
        pp = state[5*i+4]
        ww = time_first + k
        qq = torch.maximum(pp, ww)
        e1 = torch.exp(pp - qq)
        e2 = torch.exp(ww - qq)
        a = e1 * aa + e2 * v
        b = e1 * bb + e2
        wkv = a / b
        ww = pp + time_decay
        qq = torch.maximum(ww, k)
        e1 = torch.exp(ww - qq)
        e2 = torch.exp(k - qq)
        state[5*i+2] = e1 * aa + e2 * v
        state[5*i+3] = e1 * bb + e2
        state[5*i+4] = qq
        return ow @ (r * wkv)

    def forward(self, token, state):
        with torch.no_grad():
            if state == None:
                state = torch.zeros(self.args.n_layer * 5, self.args.n_embd)
                for i in range(self.args.n_layer): state[5*i+4] = -1e30  # -infinity

            x = self.w.emb.weight[token]
            x = self.layer_norm(x, self.w.blocks[0].ln0)
            for i in range(self.args.n_layer):
                att = self.w.blocks[i].att
                x = x + self.time_mixing(self.layer_norm(x, self.w.blocks[i].ln1), state, i,
                    att.time_mix_k, att.time_mix_v, att.time_mix_r, att.time_first, att.time_decay,
                    att.key.weight, att.value.weight, att.receptance.weight, att.output.weight)
                ffn = self.w.blocks[i].ffn
                x = x + self.channel_mixing(self.layer_norm(x, self.w.blocks[i].ln2), state, i,
                    ffn.time_mix_k, ffn.time_mix_r,
                    ffn.key.weight, ffn.value.weight, ffn.receptance.weight)

            x = self.w.head.weight @ self.layer_norm(x, self.w.ln_out)
            return x.float(), state


def sample_logits(out, temperature=1.0, top_p=0.8):
    probs = F.softmax(out, dim=-1).numpy()
    sorted_probs = np.sort(probs)[::-1]
    cumulative_probs = np.cumsum(sorted_probs)
    cutoff = float(sorted_probs[np.argmax(cumulative_probs > top_p)])
    probs[probs < cutoff] = 0
    if temperature != 1.0:
        probs = probs.pow(1.0 / temperature)
    probs = probs / np.sum(probs)
    out = np.random.choice(a=len(probs), p=probs)
    return out


def sequence_logits(model, tokens, params):
    """(added) the same recurrence over a whole sequence, differentiable: one state per layer
    kept as tensors (no in-place rows), the shift and WKV steps in a Python loop"""
    n, C = args.n_layer, args.n_embd
    shift_att = [torch.zeros(C) for _ in range(n)]
    shift_ffn = [torch.zeros(C) for _ in range(n)]
    aa = [torch.zeros(C) for _ in range(n)]
    bb = [torch.zeros(C) for _ in range(n)]
    pp = [torch.full((C,), -1e30) for _ in range(n)]
    outs = []
    for token in tokens:
        x = F.layer_norm(params['emb.weight'][token], (C,), params['blocks.0.ln0.weight'], params['blocks.0.ln0.bias'])
        for i in range(n):
            p = f'blocks.{i}.'
            h = F.layer_norm(x, (C,), params[p + 'ln1.weight'], params[p + 'ln1.bias'])
            mk, mv, mr = (params[p + f'att.time_mix_{m}'].squeeze() for m in 'kvr')
            xk, xv, xr = (h * m + shift_att[i] * (1 - m) for m in (mk, mv, mr))
            shift_att[i] = h
            r = torch.sigmoid(params[p + 'att.receptance.weight'] @ xr)
            k = params[p + 'att.key.weight'] @ xk
            v = params[p + 'att.value.weight'] @ xv
            ww = params[p + 'att.time_first'] + k
            qq = torch.maximum(pp[i], ww)
            e1, e2 = torch.exp(pp[i] - qq), torch.exp(ww - qq)
            wkv = (e1 * aa[i] + e2 * v) / (e1 * bb[i] + e2)
            ww = pp[i] - torch.exp(params[p + 'att.time_decay'])
            qq = torch.maximum(ww, k)
            e1, e2 = torch.exp(ww - qq), torch.exp(k - qq)
            aa[i], bb[i], pp[i] = e1 * aa[i] + e2 * v, e1 * bb[i] + e2, qq
            x = x + params[p + 'att.output.weight'] @ (r * wkv)
            h = F.layer_norm(x, (C,), params[p + 'ln2.weight'], params[p + 'ln2.bias'])
            mk, mr = (params[p + f'ffn.time_mix_{m}'].squeeze() for m in 'kr')
            xk, xr = h * mk + shift_ffn[i] * (1 - mk), h * mr + shift_ffn[i] * (1 - mr)
            shift_ffn[i] = h
            r = torch.sigmoid(params[p + 'ffn.receptance.weight'] @ xr)
            x = x + r * (params[p + 'ffn.value.weight'] @ torch.square(torch.relu(params[p + 'ffn.key.weight'] @ xk)))
        outs.append(params['head.weight'] @ F.layer_norm(x, (C,), params['ln_out.weight'], params['ln_out.bias']))
    return torch.stack(outs)


if __name__ == "__main__":
    torch.manual_seed(0)
    np.random.seed(0)
    make_checkpoint(args.MODEL_NAME + '.pth')
    print(f'\nUsing CPU. Loading {args.MODEL_NAME} ...')
    model = RWKV_RNN(args)
    print(sorted(vars(model.w.blocks[1].att)), model.w.blocks[0].att.time_decay[:3])
    context = [5, 17, 2, 9, 23, 11]
    init_state = None
    for token in context:
        init_out, init_state = model.forward(token, init_state)
    print("state", init_state.shape, init_state[4, :4], init_state[9, -3:])
    print("logits", init_out[:6])
    for TRIAL in range(2):
        print(f'\n--[ Trial {TRIAL} ]-----------------')
        all_tokens = []
        out_last = 0
        out, state = init_out.clone(), init_state.clone()
        for i in range(12):
            token = sample_logits(out, 1.0, 0.85)
            all_tokens += [token]
            out, state = model.forward(token, state)
        print(all_tokens)
        print("last", out[:4])

    # (added) the whole sequence at once, equal to the RNN's logits; then training
    params = {k: v.clone().requires_grad_() for k, v in torch.load(args.MODEL_NAME + '.pth').items()}
    with torch.no_grad():
        seq = sequence_logits(model, context, params)
    print("sequence == rnn", torch.allclose(seq[-1], init_out, atol=1e-5))
    opt = torch.optim.Adam(params.values(), lr=3e-3)
    data = torch.tensor([5, 17, 2, 9, 23, 11, 5, 17, 2, 9])
    for step in range(4):
        logits = sequence_logits(model, data[:-1].tolist(), params)
        loss = F.cross_entropy(logits, data[1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f} decay grad {params['blocks.1.att.time_decay'].grad[:3].tolist()}")
