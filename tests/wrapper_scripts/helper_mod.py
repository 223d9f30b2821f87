import numpy as np


def normalize_rows(a):
    return a / np.sqrt(np.sum(a * a, axis=1, keepdims=True) + 1e-6)
