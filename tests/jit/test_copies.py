"""`copy.copy` and `copy.deepcopy` in a step (a snapshot of the optimizer state before an
update, a best-weights copy): graph arrays and lists, tuples and dicts holding them are copied
in the graph, side by side against eager: results, state and who is who after every call (a
deep copy keeps eager's sharing; a shallow copy shares the items). Objects and Tensors stay
eager."""
import numpy as np

import janus_like as jl

from .harness import call_sequence, check, fallback_reasons, load_module, random_array

SOURCE = """
import copy
import numpy as np

def snapshot(x, st):
    best = copy.deepcopy(st["w"])       # an input array
    best += 1.0                          # (the copy only)
    before = copy.deepcopy(st)          # a dict with a list of arrays, numbers and a tuple
    st["w"] += x
    st["hist"][0] *= 2.0
    st["n"] = st["n"] + 1
    return best * x, before, before["shape"] is st["shape"]

def sharing(x, st):
    y = x * 2
    pair = copy.deepcopy([y, y, (1, 2), {"a": y}])
    pair[0][1] = -1.0                    # one copy, held three times
    shallow = copy.copy(st["hist"])
    shallow.append(y)                    # the input list is not extended
    return pair, pair[0] is pair[1], shallow, shallow[0] is st["hist"][0], copy.copy(y) is y, \
        copy.copy(st["shape"]) is st["shape"]

def objects(x, st):
    return copy.deepcopy(st["obj"]).v * x

def tensors(x, st):
    return copy.deepcopy(st["t"]) * x
"""


class Box:
    def __init__(self):
        self.v = 2.0


def _state(objects=False):
    st = {"w": random_array(90, (4,)), "hist": [random_array(91, (2,)), random_array(92, (2,))], "n": 0,
          "shape": (4,)}
    return {"st": dict(st, obj=Box(), t=jl.tensor(np.ones(4))) if objects else st}


def _calls(n):
    return call_sequence(n, lambda s, i: (random_array(i, (4,)), s["st"]))


def test_deep_copies_of_arrays_and_containers_side_by_side(tmp_path):
    module = load_module(tmp_path, SOURCE, "copies")
    for fn in (module.snapshot, module.sharing):
        jf = check(lambda: (fn, _state()), _calls(7), min_graph_calls=3)
        assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


def test_copies_of_objects_and_tensors_stay_eager(tmp_path):
    module = load_module(tmp_path, SOURCE, "copies_eager")
    for fn, what in ((module.objects, "Box"), (module.tensors, "tensor")):
        jf = check(lambda: (fn, _state(objects=True)), _calls(5), min_graph_calls=0)
        assert jf.stats()["graph_calls"] == 0 and what in jf.explain(), jf.explain()
