"""Benchmark: WikiText-2 training throughput (tokens/s) of scansnap's EmbeddingTransformer
against torch.nn.TransformerEncoder in the same configuration, side by side in one run.

Configuration (the authors' decoder_wiki.yaml): d = 200, 1 head, d_hid = 200, dropout 0.2,
post-norm, causal mask, sinusoidal positions, batch 20, bptt 35, SGD lr 5, clip 0.5; the
vocabulary of scansnap.experiments.wikitext_data() (words seen >= 3 times).

    python bench/bench_lm.py [--steps 60] [--layers 1 3] [--write-append bench/RESULTS.md]
"""
from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn as nn

from scansnap.experiments import wikitext_data
from scansnap.model import EmbeddingTransformer, sinusoidal_encoding
from scansnap.wikitext import batchify


class TorchLM(nn.Module):
    """The PyTorch word-language-model tutorial's model: nn.TransformerEncoder inside."""

    def __init__(self, vocab, d=200, heads=1, layers=1, d_hidden=200, dropout=0.2):
        super().__init__()
        self.d = d
        self.U = nn.Embedding(vocab, d)
        self.register_buffer("pe", sinusoidal_encoding(512, d))
        layer = nn.TransformerEncoderLayer(d, heads, d_hidden, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d, vocab)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        T = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=x.device)
        h = self.drop(self.U(x) * math.sqrt(self.d) + self.pe[:T])
        return self.decoder(self.encoder(h, mask=mask, is_causal=True)), None


def tokens_per_second(model, data, vocab, steps, device, bptt=35):
    model.to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=5.0)
    def step(i):
        j = (i % ((data.shape[0] - 1) // bptt)) * bptt
        x, y = data[j:j + bptt].t().to(device), data[j + 1:j + 1 + bptt].t().to(device)
        logits, _ = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
    for i in range(3):                      # warm-up
        step(i)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for i in range(steps):
        step(i)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return steps * data.shape[1] * bptt / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--write-append", help="append the Markdown report to this file")
    a = ap.parse_args()
    device = torch.device(a.device)
    tr, _, vocab = wikitext_data()
    data = batchify(tr, 20)
    V = len(vocab)
    lines = ["## WikiText-2 training throughput: scansnap vs torch.nn.TransformerEncoder", "",
             f"Command: `python bench/bench_lm.py --steps {a.steps} --device {a.device}`  ",
             f"Device: {a.device} ({torch.get_num_threads()} threads), torch {torch.__version__}, "
             f"vocabulary {V}, batch 20 x bptt 35.", "",
             "| layers | scansnap (tokens/s) | nn.TransformerEncoder (tokens/s) | ratio |", "|---|---|---|---|"]
    for L in a.layers:
        torch.manual_seed(0)
        ours = tokens_per_second(EmbeddingTransformer(V, layers=L), data, V, a.steps, device)
        torch.manual_seed(0)
        ref = tokens_per_second(TorchLM(V, layers=L), data, V, a.steps, device)
        lines.append(f"| {L} | {ours:,.0f} | {ref:,.0f} | {ours / ref:.2f} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if a.write_append:
        with open(a.write_append, "a") as fh:
            fh.write("\n" + report)


if __name__ == "__main__":
    main()
