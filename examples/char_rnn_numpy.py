"""A character-level vanilla RNN in plain NumPy, with a hand-written backward pass.

Written in the style of the classic minimal char-RNN tutorials: one-hot inputs kept in dicts
keyed by time step, tanh hidden state, softmax output, backpropagation through time, gradient
clipping with `np.clip(..., out=...)`, and Adagrad updates done in place. It knows nothing about
janus_like; run it both ways and compare:

    python examples/char_rnn_numpy.py
    janus-like run --report out/ examples/char_rnn_numpy.py
"""
import sys

import numpy as np

CORPUS = (
    "the quick brown fox jumps over the lazy dog. "
    "a journey of a thousand miles begins with a single step. "
    "all that glitters is not gold. "
    "to be or not to be, that is the question. "
    "the rain in spain stays mainly in the plain. "
) * 4

chars = sorted(set(CORPUS))
data_size, vocab_size = len(CORPUS), len(chars)
char_to_ix = {ch: i for i, ch in enumerate(chars)}
ix_to_char = {i: ch for i, ch in enumerate(chars)}

hidden_size = 64
seq_length = 16
learning_rate = 1e-1
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
print_every = 100

np.random.seed(42)
Wxh = np.random.randn(hidden_size, vocab_size) * 0.01  # input to hidden
Whh = np.random.randn(hidden_size, hidden_size) * 0.01  # hidden to hidden
Why = np.random.randn(vocab_size, hidden_size) * 0.01  # hidden to output
bh = np.zeros((hidden_size, 1))
by = np.zeros((vocab_size, 1))


def lossFun(inputs, targets, hprev):
    """inputs, targets: lists of character indices; hprev: (hidden_size, 1) initial state.
    Returns the loss, the gradients of every parameter, and the last hidden state."""
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    # forward pass
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    # backward pass
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1  # softmax + cross-entropy gradient
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext
        dhraw = (1 - hs[t] * hs[t]) * dh  # through tanh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    for dparam in [dWxh, dWhh, dWhy, dbh, dby]:
        np.clip(dparam, -5, 5, out=dparam)  # against exploding gradients
    return loss, dWxh, dWhh, dWhy, dbh, dby, hs[len(inputs) - 1]


def sample(h, seed_ix, n):
    """Sample n character indices from the model, starting from hidden state h."""
    x = np.zeros((vocab_size, 1))
    x[seed_ix] = 1
    ixes = []
    for t in range(n):
        h = np.tanh(np.dot(Wxh, x) + np.dot(Whh, h) + bh)
        y = np.dot(Why, h) + by
        p = np.exp(y) / np.sum(np.exp(y))
        ix = np.random.choice(range(vocab_size), p=p.ravel())
        x = np.zeros((vocab_size, 1))
        x[ix] = 1
        ixes.append(ix)
    return ixes


def main():
    n, p = 0, 0
    mWxh, mWhh, mWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    mbh, mby = np.zeros_like(bh), np.zeros_like(by)  # Adagrad memory
    smooth_loss = -np.log(1.0 / vocab_size) * seq_length
    hprev = np.zeros((hidden_size, 1))
    while n < iterations:
        if p + seq_length + 1 >= len(CORPUS) or n == 0:
            hprev = np.zeros((hidden_size, 1))  # reset the RNN memory
            p = 0
        inputs = [char_to_ix[ch] for ch in CORPUS[p:p + seq_length]]
        targets = [char_to_ix[ch] for ch in CORPUS[p + 1:p + seq_length + 1]]

        if n % (print_every * 5) == 0:
            sample_ix = sample(hprev, inputs[0], 60)
            print("----\n %s \n----" % "".join(ix_to_char[ix] for ix in sample_ix))

        loss, dWxh, dWhh, dWhy, dbh, dby, hprev = lossFun(inputs, targets, hprev)
        smooth_loss = smooth_loss * 0.999 + loss * 0.001
        if n % print_every == 0:
            print("iter %d, loss: %f" % (n, smooth_loss))

        # Adagrad, in place on the module-level parameters
        for param, dparam, mem in zip([Wxh, Whh, Why, bh, by], [dWxh, dWhh, dWhy, dbh, dby],
                                      [mWxh, mWhh, mWhy, mbh, mby]):
            mem += dparam * dparam
            param += -learning_rate * dparam / np.sqrt(mem + 1e-8)

        p += seq_length
        n += 1
    print("final smooth loss: %.6f" % smooth_loss)
    print("checksum: %.10f" % (np.abs(Wxh).sum() + np.abs(Whh).sum() + np.abs(Why).sum()))


if __name__ == "__main__":
    main()
