"""A janus_like script: an explicitly jitted step (the script's own jit) and a hot helper."""
import numpy as np

import janus_like as jl
from janus_like import F, GradientTape, nn, optim

rng = np.random.default_rng(0)
model = nn.Linear(4, 3, rng=rng)
opt = optim.SGD(0.1)


@jl.jit
def train_step(x, y):
    with GradientTape() as tape:
        loss = F.cross_entropy(model(x), y)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def predict(x):
    return F.argmax(model(x), axis=-1).numpy()


for i in range(10):
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.integers(0, 3, 8)
    loss = float(train_step(x, y))
    print(f"{i} {loss:.6f} {predict(x).tolist()}")
