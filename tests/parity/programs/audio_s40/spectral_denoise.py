# ruff: noqa: E501, F401, I001, UP004, UP008, UP030, UP031, UP032  (the program's own style, kept)
"""
A spectral-masking speech enhancement loop as the public denoising repositories write it
(the STFT front end of e.g. ``speechbrain``'s / ``asteroid``'s mask estimators, with the
SI-SNR loss of ``Conv-TasNet``'s ``cal_si_snr``), and torchaudio's ``griffinlim`` algorithm
written out as its functional is (``torch.polar`` phases, momentum ``angles - tprev *
momentum / (1 + momentum)``, ``angles.div(angles.abs().add(1e-16))``): noisy = clean tone
mixture + white noise; features ``log1p`` of ``torch.stft(..., return_complex=True)``
magnitudes; a small ``nn.LSTM`` + ``Linear`` + ``sigmoid`` estimates a mask that multiplies
the complex spectrum; ``torch.istft(length=...)`` back to the waveform; loss = negative
SI-SNR plus a magnitude MSE. Then a ``torch.fft.rfft`` low-pass filter
(``rfftfreq`` cut-off, ``irfft(n=...)``), ``torch.fft.fft`` / ``ifft`` with ``norm="ortho"``
and ``fftshift``, ``angle`` / ``view_as_real`` / ``view_as_complex``, and 8 Griffin-Lim
iterations from ``torch.rand`` phases (torch's draws, drawn by shardflow too).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-8


def cal_si_snr(source, estimate_source):
    """Scale-invariant SNR in dB, per utterance (B,), as Conv-TasNet's ``cal_si_snr``
    without the mask."""
    source = source - torch.mean(source, dim=-1, keepdim=True)
    estimate_source = estimate_source - torch.mean(estimate_source, dim=-1, keepdim=True)
    ref_energy = torch.sum(source ** 2, dim=-1, keepdim=True) + EPS
    proj = torch.sum(source * estimate_source, dim=-1, keepdim=True) * source / ref_energy
    noise = estimate_source - proj
    ratio = torch.sum(proj ** 2, dim=-1) / (torch.sum(noise ** 2, dim=-1) + EPS)
    sisnr = 10 * torch.log10(ratio + EPS)
    return sisnr


class MaskNet(nn.Module):
    def __init__(self, n_freq, hidden=24):
        super().__init__()
        self.lstm = nn.LSTM(n_freq, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, n_freq)

    def forward(self, mag):
        # mag: B x F x T -> mask B x F x T
        x = torch.log1p(mag).transpose(1, 2)
        x, _ = self.lstm(x)
        return torch.sigmoid(self.fc(x)).transpose(1, 2)


class STFTEnhancer(nn.Module):
    def __init__(self, n_fft=64, hop_length=16):
        super().__init__()
        self.n_fft, self.hop_length = n_fft, hop_length
        self.register_buffer("window", torch.hann_window(n_fft))
        self.masknet = MaskNet(n_fft // 2 + 1)

    def forward(self, noisy):
        spec = torch.stft(noisy, self.n_fft, hop_length=self.hop_length, window=self.window,
                          return_complex=True)
        mag = spec.abs()
        mask = self.masknet(mag)
        est = spec * mask
        wav = torch.istft(est, self.n_fft, hop_length=self.hop_length, window=self.window,
                          length=noisy.shape[-1])
        return wav, est, mask


def griffinlim(specgram, window, n_fft, hop_length, win_length, power, n_iter, momentum, length, rand_init):
    momentum = momentum / (1 + momentum)
    shape = specgram.size()
    specgram = specgram.reshape([-1] + list(shape[-2:]))
    specgram = specgram.pow(1 / power)
    if rand_init:
        angles = torch.rand(specgram.size(), dtype=torch.complex64 if specgram.dtype == torch.float32 else torch.complex128, device=specgram.device)
    else:
        angles = torch.full(specgram.size(), 1, dtype=torch.complex64, device=specgram.device)
    tprev = torch.tensor(0.0, dtype=specgram.dtype, device=specgram.device)
    losses = []
    for _ in range(n_iter):
        inverse = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, length=length)
        rebuilt = torch.stft(input=inverse, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                             center=True, pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
        angles = rebuilt
        if momentum:
            angles = angles - tprev.mul_(momentum)
        angles = angles.div(angles.abs().add(1e-16))
        tprev = rebuilt
        losses.append((rebuilt.abs() - specgram).pow(2).mean().item())
    waveform = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, length=length)
    return waveform.reshape(shape[:-2] + waveform.shape[-1:]), losses


def main():
    torch.manual_seed(0)
    sr, n = 8000, 1024
    t = torch.arange(n) / sr
    freqs = torch.tensor([[440.0, 880.0], [300.0, 1250.0], [620.0, 1800.0], [500.0, 700.0]])
    clean = (torch.sin(2 * math.pi * freqs[:, :1] * t) + 0.5 * torch.sin(2 * math.pi * freqs[:, 1:] * t)) * 0.5
    noisy = clean + 0.3 * torch.randn(clean.shape)
    print("input SI-SNR", [round(v, 4) for v in cal_si_snr(clean, noisy).tolist()])

    model = STFTEnhancer()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    clean_spec = torch.stft(clean, 64, hop_length=16, window=torch.hann_window(64), return_complex=True)
    for step in range(6):
        wav, est, mask = model(noisy)
        si = cal_si_snr(clean, wav)
        loss = -si.mean() + F.mse_loss(est.abs(), clean_spec.abs())
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("step %d loss %.5f si-snr %.5f mask %.5f" % (step, loss.item(), si.mean().item(), mask.mean().item()))

    with torch.no_grad():
        wav, est, mask = model(noisy)
    print("enhanced SI-SNR", [round(v, 3) for v in cal_si_snr(clean, wav).tolist()])
    print("phase", [round(v, 4) for v in est[0, 5:9, 10].angle().tolist()])
    print("view_as_real", tuple(torch.view_as_real(est).shape), "%.5f" % torch.view_as_real(est)[..., 1].abs().sum().item())
    spec = torch.view_as_complex(torch.view_as_real(est).contiguous())
    print("round trip", torch.equal(spec, est), spec.dtype)

    # an rfft low-pass filter: keep bins below 1 kHz
    X = torch.fft.rfft(noisy, dim=-1)
    f = torch.fft.rfftfreq(n, d=1.0 / sr)
    X = X * (f < 1000).to(X.dtype)
    low = torch.fft.irfft(X, n=n, dim=-1)
    print("lowpass SI-SNR", [round(v, 3) for v in cal_si_snr(clean, low).tolist()])
    Y = torch.fft.fftshift(torch.fft.fft(low[0], norm="ortho"))
    print("energy", "%.4f %.4f" % ((low[0] ** 2).sum().item(), (Y.abs() ** 2).sum().item()))
    back = torch.fft.ifft(torch.fft.ifftshift(Y), norm="ortho").real
    print("ifft", "%.6f" % (back - low[0]).abs().max().item() if (back - low[0]).abs().max().item() > 1e-5 else "close")

    # Griffin-Lim from the clean power spectrogram
    power = clean_spec.abs().pow(2.0)
    wav, losses = griffinlim(power, torch.hann_window(64), 64, 16, 64, 2.0, 8, 0.99, n, True)
    print("griffinlim", [round(v, 5) for v in losses])
    print("griffinlim SI-SNR", [round(v, 3) for v in cal_si_snr(clean, wav).tolist()])


if __name__ == "__main__":
    main()
