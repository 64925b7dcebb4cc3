# ruff: noqa: E501, F401, I001, UP004, UP008, UP030, UP031, UP032, E721  (the program's own style, kept)
"""
SeanNaren/deepspeech.pytorch (MIT licence) written small: ``deepspeech_pytorch/model.py``
(``SequenceWise``, ``MaskConv`` (``masked_fill`` of the padded time steps after each conv
module, ``mask.size(2) - length`` per row), ``BatchRNN`` (``SequenceWise(BatchNorm1d)``,
``nn.utils.rnn.pack_padded_sequence`` / ``pad_packed_sequence`` around a bidirectional
GRU, the two directions summed by ``view(T, N, 2, -1).sum(2)``), ``Lookahead`` (a grouped
``conv1d`` over ``F.pad`` ed time), ``InferenceBatchSoftmax``, ``get_seq_lens`` (the conv
output lengths by integer arithmetic on a tensor), ``Hardtanh(0, 20)``), the loader's
spectrogram (``torch.stft`` with a Hamming window, ``abs``, ``log1p``, per-utterance
``mean``/``std`` normalisation), ``nn.CTCLoss(blank=0, reduction='sum', zero_infinity=True)``
divided by the batch size as the trainer does, ``torch.nn.utils.clip_grad_norm_``, SGD with
Nesterov momentum, and ``GreedyDecoder`` (``max(2)``, collapse repeats and blanks, offsets).
Data: 8 synthetic utterances of different lengths, 4 steps of batch 4 (sorted by length,
as the sampler buckets them), then decoding.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SequenceWise(nn.Module):
    def __init__(self, module):
        """
        Collapses input of dim T*N*H to (T*N)*H, and applies to a module.
        Allows handling of variable sequence lengths and minibatch sizes.
        :param module: Module to apply input to.
        """
        super(SequenceWise, self).__init__()
        self.module = module

    def forward(self, x):
        t, n = x.size(0), x.size(1)
        x = x.view(t * n, -1)
        x = self.module(x)
        x = x.view(t, n, -1)
        return x

    def __repr__(self):
        tmpstr = self.__class__.__name__ + ' (\n'
        tmpstr += self.module.__repr__()
        tmpstr += ')'
        return tmpstr


class MaskConv(nn.Module):
    def __init__(self, seq_module):
        """
        Adds padding to the output of the module based on the given lengths. This is to ensure that the
        results of the model do not change when batch sizes change during inference.
        Input needs to be in the shape of (BxCxDxT)
        :param seq_module: The sequential module containing the conv stack.
        """
        super(MaskConv, self).__init__()
        self.seq_module = seq_module

    def forward(self, x, lengths):
        """
        :param x: The input of size BxCxDxT
        :param lengths: The actual length of each sequence in the batch
        :return: Masked output from the module
        """
        for module in self.seq_module:
            x = module(x)
            mask = torch.BoolTensor(x.size()).fill_(0)
            if x.is_cuda:
                mask = mask.cuda()
            for i, length in enumerate(lengths):
                length = length.item()
                if (mask[i].size(2) - length) > 0:
                    mask[i].narrow(2, length, mask[i].size(2) - length).fill_(1)
            x = x.masked_fill(mask, 0)
        return x, lengths


class InferenceBatchSoftmax(nn.Module):
    def forward(self, input_):
        if not self.training:
            return F.softmax(input_, dim=-1)
        else:
            return input_


class BatchRNN(nn.Module):
    def __init__(self, input_size, hidden_size, rnn_type=nn.LSTM, bidirectional=False, batch_norm=True):
        super(BatchRNN, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bidirectional = bidirectional
        self.batch_norm = SequenceWise(nn.BatchNorm1d(input_size)) if batch_norm else None
        self.rnn = rnn_type(input_size=input_size, hidden_size=hidden_size,
                            bidirectional=bidirectional, bias=True)
        self.num_directions = 2 if bidirectional else 1

    def flatten_parameters(self):
        self.rnn.flatten_parameters()

    def forward(self, x, output_lengths, h=None):
        if self.batch_norm is not None:
            x = self.batch_norm(x)
        x = nn.utils.rnn.pack_padded_sequence(x, output_lengths)
        x, h = self.rnn(x, h)
        x, _ = nn.utils.rnn.pad_packed_sequence(x)
        if self.bidirectional:
            x = x.view(x.size(0), x.size(1), 2, -1).sum(2).view(x.size(0), x.size(1), -1)  # (TxNxH*2) -> (TxNxH) by sum
        return x, h


class Lookahead(nn.Module):
    # Wang et al 2016 - Lookahead Convolution Layer for Unidirectional Recurrent Neural Networks
    # input shape - sequence, batch, feature - TxNxH
    # output shape - same as input
    def __init__(self, n_features, context):
        super(Lookahead, self).__init__()
        assert context > 0
        self.context = context
        self.n_features = n_features
        self.pad = (0, self.context - 1)
        self.conv = nn.Conv1d(
            self.n_features,
            self.n_features,
            kernel_size=self.context,
            stride=1,
            groups=self.n_features,
            padding=0,
            bias=False
        )

    def forward(self, x):
        x = x.transpose(0, 1).transpose(1, 2)
        x = F.pad(x, pad=self.pad, value=0)
        x = self.conv(x)
        x = x.transpose(1, 2).transpose(0, 1).contiguous()
        return x

    def __repr__(self):
        return self.__class__.__name__ + '(' \
               + 'n_features=' + str(self.n_features) \
               + ', context=' + str(self.context) + ')'


class DeepSpeech(nn.Module):
    def __init__(self, labels, n_fft, hidden_size=16, hidden_layers=2, bidirectional=True, lookahead_context=3):
        super().__init__()
        self.labels = labels
        self.bidirectional = bidirectional
        num_classes = len(self.labels)

        self.conv = MaskConv(nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=(11, 5), stride=(2, 2), padding=(5, 2)),
            nn.BatchNorm2d(4),
            nn.Hardtanh(0, 20, inplace=True),
            nn.Conv2d(4, 4, kernel_size=(5, 3), stride=(2, 1), padding=(2, 1)),
            nn.BatchNorm2d(4),
            nn.Hardtanh(0, 20, inplace=True)
        ))
        # Based on above convolutions and spectrogram size using conv formula (W - F + 2P)/ S+1
        rnn_input_size = int(math.floor((n_fft // 2 + 1) + 2 * 5 - 11) / 2 + 1)
        rnn_input_size = int(math.floor(rnn_input_size + 2 * 2 - 5) / 2 + 1)
        rnn_input_size *= 4

        self.rnns = nn.Sequential(
            BatchRNN(
                input_size=rnn_input_size,
                hidden_size=hidden_size,
                rnn_type=nn.GRU,
                bidirectional=self.bidirectional,
                batch_norm=False
            ),
            *(
                BatchRNN(
                    input_size=hidden_size,
                    hidden_size=hidden_size,
                    rnn_type=nn.GRU,
                    bidirectional=self.bidirectional
                ) for x in range(hidden_layers - 1)
            )
        )

        self.lookahead = nn.Sequential(
            # consider adding batch norm?
            Lookahead(hidden_size, context=lookahead_context),
            nn.Hardtanh(0, 20, inplace=True)
        ) if not self.bidirectional else None

        fully_connected = nn.Sequential(
            nn.BatchNorm1d(hidden_size),
            nn.Linear(hidden_size, num_classes, bias=False)
        )
        self.fc = nn.Sequential(
            SequenceWise(fully_connected),
        )
        self.inference_softmax = InferenceBatchSoftmax()

    def forward(self, x, lengths):
        lengths = lengths.cpu().int()
        output_lengths = self.get_seq_lens(lengths)
        x, _ = self.conv(x, output_lengths)

        sizes = x.size()
        x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3])  # Collapse feature dimension
        x = x.transpose(1, 2).transpose(0, 1).contiguous()  # TxNxH

        for rnn in self.rnns:
            x, h = rnn(x, output_lengths)

        if not self.bidirectional:  # no need for lookahead layer in bidirectional
            x = self.lookahead(x)

        x = self.fc(x)
        x = x.transpose(0, 1)
        # identity in training mode, softmax in eval mode
        x = self.inference_softmax(x)
        return x, output_lengths

    def get_seq_lens(self, input_length):
        """
        Given a 1D Tensor or Variable containing integer sequence lengths, return a 1D tensor or variable
        containing the size sequences that will be output by the network.
        :param input_length: 1D Tensor
        :return: 1D Tensor scaled by model
        """
        seq_len = input_length
        for m in self.conv.modules():
            if type(m) == nn.modules.conv.Conv2d:
                seq_len = seq_len + 2 * m.padding[1] - m.dilation[1] * (m.kernel_size[1] - 1) - 1
                seq_len = seq_len.true_divide(m.stride[1]) + 1
        return seq_len.int()


class GreedyDecoder(object):
    def __init__(self, labels, blank_index=0):
        self.labels = labels
        self.int_to_char = dict([(i, c) for (i, c) in enumerate(labels)])
        self.blank_index = blank_index

    def convert_to_strings(self, sequences, sizes=None, remove_repetitions=False, return_offsets=False):
        """Given a list of numeric sequences, returns the corresponding strings"""
        strings = []
        offsets = [] if return_offsets else None
        for x in range(len(sequences)):
            seq_len = sizes[x] if sizes is not None else len(sequences[x])
            string, string_offsets = self.process_string(sequences[x], seq_len, remove_repetitions)
            strings.append([string])  # We only return one path
            if return_offsets:
                offsets.append([string_offsets])
        if return_offsets:
            return strings, offsets
        else:
            return strings

    def process_string(self, sequence, size, remove_repetitions=False):
        string = ''
        offsets = []
        for i in range(size):
            char = self.int_to_char[sequence[i].item()]
            if char != self.int_to_char[self.blank_index]:
                # if this char is a repetition and remove_repetitions=true, then skip
                if remove_repetitions and i != 0 and char == self.int_to_char[sequence[i - 1].item()]:
                    pass
                elif char == self.labels[self.blank_index]:
                    string += ' '
                    offsets.append(i)
                else:
                    string = string + char
                    offsets.append(i)
        return string, torch.tensor(offsets, dtype=torch.int)

    def decode(self, probs, sizes=None):
        _, max_probs = torch.max(probs, 2)
        strings, offsets = self.convert_to_strings(max_probs.view(max_probs.size(0), max_probs.size(1)),
                                                   sizes,
                                                   remove_repetitions=True,
                                                   return_offsets=True)
        return strings, offsets


def parse_audio(y, n_fft=64, hop_length=16):
    # STFT, as the loader's librosa call, with torch.stft
    D = torch.stft(y, n_fft=n_fft, hop_length=hop_length, win_length=n_fft,
                   window=torch.hamming_window(n_fft), return_complex=True)
    spect = D.abs()
    spect = torch.log1p(spect)
    mean = spect.mean()
    std = spect.std()
    spect.add_(-mean)
    spect.div_(std)
    return spect


def main():
    torch.manual_seed(0)
    labels = "_'abcdefgh "
    n_fft = 64
    g = torch.Generator().manual_seed(1)
    utterances = []
    for i in range(8):
        n = 900 + 120 * i
        t = torch.arange(n, dtype=torch.float32) / 8000
        freq = 300 + 150 * (i % 4)
        y = torch.sin(2 * math.pi * freq * t) * (1 + 0.3 * torch.sin(2 * math.pi * 3 * t)) + 0.1 * torch.randn(n, generator=g)
        text = [labels.index(c) for c in "abcdefgh"[i % 4: i % 4 + 2 + i % 3]]
        utterances.append((parse_audio(y, n_fft), torch.IntTensor(text)))

    model = DeepSpeech(labels, n_fft)
    print(model)
    decoder = GreedyDecoder(labels)
    criterion = nn.CTCLoss(blank=labels.index('_'), reduction='sum', zero_infinity=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=3e-2, momentum=0.9, nesterov=True, weight_decay=1e-5)

    def collate(batch):
        batch = sorted(batch, key=lambda sample: sample[0].size(1), reverse=True)
        freq_size = batch[0][0].size(0)
        max_seqlength = batch[0][0].size(1)
        inputs = torch.zeros(len(batch), 1, freq_size, max_seqlength)
        input_percentages = torch.FloatTensor(len(batch))
        target_sizes = torch.IntTensor(len(batch))
        targets = []
        for x in range(len(batch)):
            tensor, target = batch[x]
            seq_length = tensor.size(1)
            inputs[x][0].narrow(1, 0, seq_length).copy_(tensor)
            input_percentages[x] = seq_length / float(max_seqlength)
            target_sizes[x] = len(target)
            targets.extend(target.tolist())
        targets = torch.tensor(targets, dtype=torch.long)
        return inputs, targets, input_percentages, target_sizes

    model.train()
    for step in range(4):
        batch = [utterances[(step * 3 + k) % 8] for k in range(4)]
        inputs, targets, input_percentages, target_sizes = collate(batch)
        input_sizes = input_percentages.mul_(int(inputs.size(3))).int()
        out, output_sizes = model(inputs, input_sizes)
        out = out.transpose(0, 1)  # TxNxH
        out = out.log_softmax(-1)
        loss = criterion(out, targets, output_sizes, target_sizes)
        loss = loss / inputs.size(0)  # average the loss by minibatch
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 4.0)
        optimizer.step()
        print('step %d sizes %s loss %.6f norm %.6f' % (step, output_sizes.tolist(), loss.item(), norm.item()))

    model.eval()
    with torch.no_grad():
        inputs, targets, input_percentages, target_sizes = collate(utterances[:4])
        input_sizes = input_percentages.mul_(int(inputs.size(3))).int()
        out, output_sizes = model(inputs, input_sizes)
    print('probs', tuple(out.shape), '%.6f' % out.sum().item(), '%.6f' % out[0, 0].max().item())
    decoded_output, decoded_offsets = decoder.decode(out, output_sizes)
    for s, o in zip(decoded_output, decoded_offsets):
        print(repr(s[0]), o[0].tolist())

    unidirectional = DeepSpeech(labels, n_fft, bidirectional=False)
    unidirectional.eval()
    with torch.no_grad():
        out, _ = unidirectional(inputs, input_sizes)
    print(unidirectional.lookahead)
    print('lookahead', '%.6f' % out[1, :3].sum().item(), [round(v, 5) for v in out[1, 2].tolist()])


if __name__ == '__main__':
    main()
