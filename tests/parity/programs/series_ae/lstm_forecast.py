"""An LSTM forecaster on a synthetic seasonal series with early stopping, as a script.

Modelled on the habits of the LSTM forecasting code people copy (e.g. jdb78's and
philipperemy's forecasting examples, LSTNet-style scripts): sliding windows built with
``torch.stack`` over ``range`` and with ``Tensor.unfold``, min-max scaling, an
``nn.LSTM(batch_first=True)`` with ``h0``/``c0`` from ``torch.zeros``, a ``Linear`` head on
the last step, ``TensorDataset`` + ``DataLoader(shuffle=True)``, ``ReduceLROnPlateau`` on the
validation loss, early stopping that keeps ``copy.deepcopy(model.state_dict())`` and loads
it back, MAPE and SMAPE. This is a re-implementation in our own words with tiny sizes and
synthetic data, not a copy of any one file.
"""

import copy
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_series(n=80):
    t = torch.arange(n, dtype=torch.float32)
    return 10 + 0.05 * t + 2 * torch.sin(2 * math.pi * t / 12) + 0.3 * torch.randn(n)


def sliding_windows(series, lookback, horizon):
    xs = torch.stack([series[i:i + lookback] for i in range(len(series) - lookback - horizon + 1)])
    ys = torch.stack([series[i + lookback:i + lookback + horizon]
                      for i in range(len(series) - lookback - horizon + 1)])
    return xs.unsqueeze(-1), ys


class LSTMForecaster(nn.Module):
    def __init__(self, input_size=1, hidden_size=8, num_layers=2, horizon=2, dropout=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.fc = nn.Linear(hidden_size, horizon)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size)
        out, (hn, cn) = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])


def mape(y_true, y_pred):
    return torch.mean(torch.abs((y_true - y_pred) / y_true)) * 100


def smape(y_true, y_pred):
    return 100 * torch.mean(2 * torch.abs(y_pred - y_true) / (torch.abs(y_true) + torch.abs(y_pred)))


def main(epochs=6, lookback=10, horizon=2, patience=2):
    torch.manual_seed(42)
    series = make_series()
    lo, hi = series.min(), series.max()
    scaled = (series - lo) / (hi - lo)
    X, Y = sliding_windows(scaled, lookback, horizon)
    unfolded = scaled.unfold(0, lookback + horizon, 1)
    print("windows", tuple(X.shape), tuple(Y.shape), tuple(unfolded.shape),
          torch.equal(unfolded[:, :lookback], X.squeeze(-1)))
    split = int(len(X) * 0.75)
    train_ds = TensorDataset(X[:split], Y[:split])
    val_x, val_y = X[split:], Y[split:]
    loader = DataLoader(train_ds, batch_size=16, shuffle=True)

    model = LSTMForecaster(horizon=horizon)
    print(model)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5, patience=0)

    best_loss, best_state, bad_epochs = float('inf'), None, 0
    for epoch in range(epochs):
        model.train()
        running = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            running += loss.item() * xb.size(0)
        train_loss = running / len(train_ds)
        model.eval()
        with torch.no_grad():
            val_loss = criterion(model(val_x), val_y).item()
        scheduler.step(val_loss)
        lr = optimizer.param_groups[0]['lr']
        print(f"epoch {epoch} train {train_loss:.6f} val {val_loss:.6f} lr {lr:.5f}")
        if val_loss < best_loss:
            best_loss, bad_epochs = val_loss, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                print(f"early stopping at epoch {epoch}")
                break

    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        pred = model(val_x) * (hi - lo) + lo
        true = val_y * (hi - lo) + lo
    print(f"best val {best_loss:.6f} MAPE {mape(true, pred):.4f} SMAPE {smape(true, pred).item():.4f}")
    print("last forecast", pred[-1])
    return model, best_state


if __name__ == "__main__":
    model, best_state = main()
