# ruff: noqa: E501, F401, I001, UP004, UP008, UP030, UP031, UP032  (the program's own style, kept)
"""
pytorch/examples' ``word_language_model`` (BSD licence) in the adaptive-softmax variant that
the forks and the "Efficient softmax approximation" write-ups use: ``data.py``'s
``Dictionary`` / ``Corpus`` (on a small generated corpus instead of Wikitext-2),
``batchify``, ``get_batch`` and ``repackage_hidden``; an ``RNNModel`` (``Embedding`` ->
``LSTM`` -> ``nn.AdaptiveLogSoftmaxWithLoss(nhid, ntokens, cutoffs, div_value=2.0,
head_bias=True)``, the decoder's ``output.loss`` as the training loss); the plain-SGD update
``p.data.add_(p.grad, alpha=-lr)`` after ``clip_grad_norm_``, the lr annealed by 4 when
validation does not improve, ``math.exp`` perplexities; then ``generate.py``'s loop over
``log_prob`` (``div(temperature).exp()``, ``torch.multinomial``: torch's draws, drawn by
shardflow too) and ``predict``. Dropout is 0.
"""
import math
import os

import torch
import torch.nn as nn


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus(object):
    def __init__(self, lines):
        self.dictionary = Dictionary()
        # frequent words first, as the adaptive softmax expects (sorted by count)
        counts = {}
        for line in lines:
            for word in line.split() + ['<eos>']:
                counts[word] = counts.get(word, 0) + 1
        for word in sorted(counts, key=lambda w: (-counts[w], w)):
            self.dictionary.add_word(word)
        n = len(lines)
        self.train = self.tokenize(lines[: n * 3 // 4])
        self.valid = self.tokenize(lines[n * 3 // 4:])

    def tokenize(self, lines):
        idss = []
        for line in lines:
            words = line.split() + ['<eos>']
            ids = []
            for word in words:
                ids.append(self.dictionary.word2idx[word])
            idss.append(torch.tensor(ids).type(torch.int64))
        ids = torch.cat(idss)
        return ids


def make_lines(n):
    g = torch.Generator().manual_seed(3)
    subjects = ['the cat', 'a dog', 'the old man', 'my friend', 'she', 'he']
    verbs = ['sees', 'likes', 'takes', 'finds', 'wants']
    objects = ['the ball', 'a red apple', 'the small house', 'some bread', 'the river', 'an idea', 'the long road']
    tails = ['', 'today', 'again', 'in the morning', 'with care']
    lines = []
    for _ in range(n):
        s, v, o, t = (torch.randint(len(x), (1,), generator=g).item() for x in (subjects, verbs, objects, tails))
        lines.append(' '.join(w for w in (subjects[s], verbs[v], objects[o], tails[t]) if w))
    return lines


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and an adaptive softmax decoder."""

    def __init__(self, ntoken, ninp, nhid, nlayers, cutoffs, dropout=0.0):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.AdaptiveLogSoftmaxWithLoss(nhid, ntoken, cutoffs=cutoffs, div_value=2.0, head_bias=True)
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)

    def forward(self, input, hidden, target):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        out = self.decoder(output.view(-1, self.nhid), target.view(-1))
        return out, hidden

    def log_prob(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        return self.decoder.log_prob(output.view(-1, self.nhid)), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""

    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


bptt = 8


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def main():
    torch.manual_seed(1111)
    corpus = Corpus(make_lines(120))
    ntokens = len(corpus.dictionary)
    print('vocabulary', ntokens, corpus.dictionary.idx2word[:6])
    train_data = batchify(corpus.train, 6)
    val_data = batchify(corpus.valid, 4)
    model = RNNModel(ntokens, 12, 16, 2, cutoffs=[6, 14])
    print(model.decoder)
    lr = 4.0
    best_val_loss = None

    def evaluate(data_source, bsz):
        model.eval()
        total_loss = 0.
        hidden = model.init_hidden(bsz)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i)
                out, hidden = model(data, hidden, targets)
                hidden = repackage_hidden(hidden)
                total_loss += len(data) * out.loss.item()
        return total_loss / (len(data_source) - 1)

    for epoch in range(1, 3):
        model.train()
        total_loss = 0.
        hidden = model.init_hidden(6)
        for batch, i in enumerate(range(0, min(train_data.size(0) - 1, 40), bptt)):
            data, targets = get_batch(train_data, i)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            out, hidden = model(data, hidden, targets)
            loss = out.loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total_loss += loss.item()
            print('| epoch {:3d} | batch {:2d} | lr {:02.2f} | loss {:5.4f} | ppl {:8.4f} | out {:.5f}'.format(
                epoch, batch, lr, loss.item(), math.exp(loss.item()), out.output.mean().item()))
        val_loss = evaluate(val_data, 4)
        print('| end of epoch {:3d} | valid loss {:5.4f} | valid ppl {:8.4f}'.format(epoch, val_loss, math.exp(val_loss)))
        if not best_val_loss or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0

    # generate.py, with the adaptive softmax's log_prob
    model.eval()
    hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long)
    words = []
    temperature = 1.0
    with torch.no_grad():
        for i in range(12):
            logp, hidden = model.log_prob(input, hidden)
            word_weights = logp.squeeze().div(temperature).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            input.fill_(word_idx)
            words.append(corpus.dictionary.idx2word[word_idx])
    print(' '.join(words))
    with torch.no_grad():
        data, targets = get_batch(val_data, 0)
        emb, _ = model.rnn(model.encoder(data), model.init_hidden(4))
        flat = emb.view(-1, 16)
        print('predict', model.decoder.predict(flat).tolist())
        print('log_prob rows sum to 1', torch.allclose(model.decoder.log_prob(flat).exp().sum(1), torch.ones(flat.size(0))))


if __name__ == '__main__':
    main()
