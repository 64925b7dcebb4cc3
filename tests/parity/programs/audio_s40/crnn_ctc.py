# ruff: noqa: E501, F401, I001, UP004, UP008, UP030, UP031, UP032  (the program's own style, kept)
"""
meijieru/crnn.pytorch (MIT licence) written small: ``models/crnn.py`` (the conv stack with
BatchNorm and the asymmetric ``MaxPool2d((2, 2), (2, 1), (0, 1))`` pools, ``squeeze(2)``,
``permute(2, 0, 1)`` to T x B x C, ``BidirectionalLSTM`` with its ``view(T * b, h)``
embedding), ``utils.strLabelConverter`` (labels concatenated, ``IntTensor`` lengths, greedy
decode collapsing repeats and blanks), and ``train.py``'s loop (``CTCLoss`` now
``nn.CTCLoss(blank=0, zero_infinity=True)`` over ``F.log_softmax(2)``, ``IntTensor``
``preds_size``, ``--adadelta``: Adam or RMSprop would step the conv biases before
BatchNorm, whose gradient is 0 in exact arithmetic, on rounding noise), plus ``argmax`` + ``torch.unique_consecutive`` greedy decoding as the
newer forks write it. Data: 24 synthetic 1 x 32 x 64 "digit strip" images (each label
column a fixed random glyph), 6 steps of batch 8, then decoding.
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class BidirectionalLSTM(nn.Module):

    def __init__(self, nIn, nHidden, nOut):
        super(BidirectionalLSTM, self).__init__()

        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)

    def forward(self, input):
        recurrent, _ = self.rnn(input)
        T, b, h = recurrent.size()
        t_rec = recurrent.view(T * b, h)

        output = self.embedding(t_rec)  # [T * b, nOut]
        output = output.view(T, b, -1)

        return output


class CRNN(nn.Module):

    def __init__(self, imgH, nc, nclass, nh, leakyRelu=False):
        super(CRNN, self).__init__()
        assert imgH % 16 == 0, 'imgH has to be a multiple of 16'

        ks = [3, 3, 3, 3, 3, 3, 2]
        ps = [1, 1, 1, 1, 1, 1, 0]
        ss = [1, 1, 1, 1, 1, 1, 1]
        nm = [4, 8, 8, 8, 16, 16, 16]

        cnn = nn.Sequential()

        def convRelu(i, batchNormalization=False):
            nIn = nc if i == 0 else nm[i - 1]
            nOut = nm[i]
            cnn.add_module('conv{0}'.format(i),
                           nn.Conv2d(nIn, nOut, ks[i], ss[i], ps[i]))
            if batchNormalization:
                cnn.add_module('batchnorm{0}'.format(i), nn.BatchNorm2d(nOut))
            if leakyRelu:
                cnn.add_module('relu{0}'.format(i),
                               nn.LeakyReLU(0.2, inplace=True))
            else:
                cnn.add_module('relu{0}'.format(i), nn.ReLU(True))

        convRelu(0)
        cnn.add_module('pooling{0}'.format(0), nn.MaxPool2d(2, 2))  # 4x16x32
        convRelu(1)
        cnn.add_module('pooling{0}'.format(1), nn.MaxPool2d(2, 2))  # 8x8x16
        convRelu(2, True)
        convRelu(3)
        cnn.add_module('pooling{0}'.format(2),
                       nn.MaxPool2d((2, 2), (2, 1), (0, 1)))  # 8x4x17
        convRelu(4, True)
        convRelu(5)
        cnn.add_module('pooling{0}'.format(3),
                       nn.MaxPool2d((2, 2), (2, 1), (0, 1)))  # 16x2x18
        convRelu(6, True)  # 16x1x17

        self.cnn = cnn
        self.rnn = nn.Sequential(
            BidirectionalLSTM(16, nh, nh),
            BidirectionalLSTM(nh, nh, nclass))

    def forward(self, input):
        # conv features
        conv = self.cnn(input)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        conv = conv.squeeze(2)
        conv = conv.permute(2, 0, 1)  # [w, b, c]

        # rnn features
        output = self.rnn(conv)

        # add log_softmax to converge output
        output = F.log_softmax(output, dim=2)

        return output


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class strLabelConverter(object):
    """Convert between str and label.

    NOTE:
        Insert `blank` to the alphabet for CTC.
    """

    def __init__(self, alphabet, ignore_case=False):
        self._ignore_case = ignore_case
        if self._ignore_case:
            alphabet = alphabet.lower()
        self.alphabet = alphabet + '-'  # for `-1` index

        self.dict = {}
        for i, char in enumerate(alphabet):
            # NOTE: 0 is reserved for 'blank' required by wrap_ctc
            self.dict[char] = i + 1

    def encode(self, text):
        if isinstance(text, str):
            text = [self.dict[char.lower() if self._ignore_case else char] for char in text]
            length = [len(text)]
        else:
            length = [len(s) for s in text]
            text = ''.join(text)
            text, _ = self.encode(text)
        return (torch.IntTensor(text), torch.IntTensor(length))

    def decode(self, t, length, raw=False):
        if length.numel() == 1:
            length = length[0]
            assert t.numel() == length, "text with length: {} does not match declared length: {}".format(t.numel(), length)
            if raw:
                return ''.join([self.alphabet[i - 1] for i in t])
            else:
                char_list = []
                for i in range(length):
                    if t[i] != 0 and (not (i > 0 and t[i - 1] == t[i])):
                        char_list.append(self.alphabet[t[i] - 1])
                return ''.join(char_list)
        else:
            # batch mode
            assert t.numel() == length.sum(), "texts with length: {} does not match declared length: {}".format(t.numel(), length.sum())
            texts = []
            index = 0
            for i in range(length.numel()):
                l = length[i]
                texts.append(
                    self.decode(
                        t[index:index + l], torch.IntTensor([l]), raw=raw))
                index += l
            return texts


def make_data(n, rng, alphabet):
    glyphs = rng.uniform(0, 1, (len(alphabet), 32, 6)).astype(np.float32)
    images, texts = [], []
    for _ in range(n):
        k = int(rng.integers(2, 6))
        text = ''.join(alphabet[int(j)] for j in rng.integers(0, len(alphabet), k))
        img = np.zeros((1, 32, 64), np.float32)
        for j, ch in enumerate(text):
            img[0, :, 4 + j * 11: 10 + j * 11] = glyphs[alphabet.index(ch)]
        images.append(img + 0.05 * rng.standard_normal((1, 32, 64)).astype(np.float32))
        texts.append(text)
    return np.stack(images), texts


def greedy_decode(preds, blank=0):
    # preds: T x B x C log-probabilities
    best = preds.argmax(2).transpose(1, 0)  # B x T
    out = []
    for seq in best:
        seq = torch.unique_consecutive(seq)
        seq = seq[seq != blank]
        out.append(seq.tolist())
    return out


def main():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    alphabet = '0123456789'
    rng = np.random.default_rng(0)
    images, texts = make_data(24, rng, alphabet)

    nclass = len(alphabet) + 1
    converter = strLabelConverter(alphabet)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)

    crnn = CRNN(32, 1, nclass, 12)
    crnn.apply(weights_init)
    print(crnn.cnn)
    print('parameters', sum(p.numel() for p in crnn.parameters()))
    optimizer = optim.Adadelta(crnn.parameters())  # train.py's --adadelta

    image = torch.FloatTensor(8, 1, 32, 64)
    for step in range(6):
        idx = np.arange(step * 8, step * 8 + 8) % 24
        cpu_images = torch.from_numpy(images[idx])
        cpu_texts = [texts[i] for i in idx]
        image.resize_(cpu_images.size()).copy_(cpu_images)
        t, l = converter.encode(cpu_texts)

        preds = crnn(image)
        batch_size = cpu_images.size(0)
        preds_size = torch.IntTensor([preds.size(0)] * batch_size)
        cost = criterion(preds, t, preds_size, l)
        crnn.zero_grad()
        cost.backward()
        optimizer.step()
        print('step %d loss: %f grad %.6f' % (step, cost.item(), crnn.rnn[1].embedding.weight.grad.norm().item()))

    crnn.eval()
    with torch.no_grad():
        preds = crnn(torch.from_numpy(images[:4]))
    _, best = preds.max(2)
    best = best.transpose(1, 0).contiguous().view(-1)
    preds_size = torch.IntTensor([preds.size(0)] * 4)
    raw_preds = converter.decode(best.data, preds_size.data, raw=True)
    sim_preds = converter.decode(best.data, preds_size.data, raw=False)
    for raw_pred, pred, gt in zip(raw_preds, sim_preds, texts[:4]):
        print('%-20s => %-20s, gt: %-20s' % (raw_pred, pred, gt))
    print('greedy', greedy_decode(preds))
    # per-sample losses, an impossible target (longer than the input: inf, zeroed)
    t, l = converter.encode(texts[:4])
    per = F.ctc_loss(preds, t, preds_size, l, reduction='none')
    print('per-sample', [round(v, 4) for v in per.tolist()])
    long_t = torch.randint(1, nclass, (2, 20))
    inf = F.ctc_loss(preds[:, :2], long_t, torch.tensor([17, 17]), torch.tensor([20, 3]), reduction='none')
    zeroed = F.ctc_loss(preds[:, :2], long_t, torch.tensor([17, 17]), torch.tensor([20, 3]), reduction='sum', zero_infinity=True)
    print('inf', inf.tolist(), 'zeroed %.5f' % zeroed.item())


if __name__ == '__main__':
    main()
