"""Input objects whose identity decides the outcome, side by side with eager: enum members
compared with `is` / `==`, objects defining their own truth, namedtuple fields."""
import collections
import enum

import numpy as np

from .harness import check


class _Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


_Batch = collections.namedtuple("_Batch", "x y")


class _Flagged:
    def __init__(self, on):
        self.on = on

    def __bool__(self):
        return self.on


def mode_step(batch, mode, flag):
    out = batch.x * 2.0 + batch[1]  # a namedtuple's field and its item
    if mode is _Mode.TRAIN:
        out = out + 1.0
    if mode == _Mode.EVAL:
        out = out * 0.5
    if flag:  # an object with its own truth
        out = out - 3.0
    return out


def test_enum_members_and_objects_with_their_own_truth_are_guarded():
    """`mode is Mode.TRAIN` was decided at generation with only the enum's type guarded: an
    EVAL call ran the TRAIN graph (a wrong result). Compared objects of one type, and objects
    defining __bool__ or __len__, are now guarded by identity; namedtuple fields are items."""
    flags = [_Flagged(True), _Flagged(False)]

    def call(s, k):
        b = _Batch(np.full(3, float(k)), np.ones(3))
        return b, _Mode.EVAL if k % 5 == 4 else _Mode.TRAIN, flags[(k // 3) % 2]

    jf = check(lambda: (mode_step, {}), [lambda s, k=k: call(s, k) for k in range(20)], min_graph_calls=8)
    assert len(jf.graphs()) >= 2, jf.explain()
