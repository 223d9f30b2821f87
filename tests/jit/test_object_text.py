"""Text made from the input objects, side by side with eager: `str(cfg)`, `repr(cfg)`,
`format(cfg)`, an f-string of it and `print(cfg)`, where the class shows its objects with its own
`__repr__`/`__str__`/`__format__`, before and after the call changes the object; an enum member;
a graph value's text read as a string (`len(str(loss))`), and `cfg in [cfg]`. The graph made the
text of its own symbolic stand-in (`'ObjRef(Cfg at ...)'`), or of the object after the commit."""
import enum

from .harness import check, fallback_reasons, load_module, random_array

PROGRAM = """
import enum


class Cfg:
    def __init__(self):
        self.lr = 0.1

    def __repr__(self):
        return f"Cfg(lr={self.lr:.4f})"


class Tagged(Cfg):
    def __str__(self):
        return "tagged " + repr(self)

    def __format__(self, spec):
        return f"<{self.lr:{spec}}>"


class Color(enum.Enum):
    RED = 1


def texts(x, cfg, tagged, log):
    log.append(str(cfg) + " " + repr(tagged) + " " + str(tagged) + " " + format(tagged, ".2f"))
    before = f"{cfg} {cfg!r} {tagged:.3f} {Color.RED}"
    print(cfg, tagged)
    cfg.lr = cfg.lr * 0.9  # written after the text above was made, before the text below
    tagged.lr = tagged.lr + 0.01
    print(cfg, f"{tagged}", Color.RED)
    log.append(before + " | " + str(cfg))
    return x * cfg.lr, str(Color.RED), cfg in [cfg, tagged], tagged in [cfg]
"""


def test_text_of_input_objects_is_made_where_the_program_makes_it(tmp_path):
    def make():
        mod = load_module(tmp_path, PROGRAM, "object_text")
        cfg, tagged = mod.Cfg(), mod.Tagged()  # (each side's own classes: the state holds their attributes)
        return (lambda x, log: mod.texts(x, cfg, tagged, log)), {"cfg": vars(cfg), "tagged": vars(tagged), "log": []}

    check(make, [lambda s, k=k: (random_array(k, (3,)), s["log"]) for k in range(16)], min_graph_calls=6)


class Plain:
    def __init__(self):
        self.lr = 0.5


class Shade(enum.Enum):
    DARK = 1
    LIGHT = 2


def plain_text(x, p, shade):
    p.lr = p.lr * 0.5
    text = str(float(x.sum()))
    return repr(shade), str(shade), f"{shade}", p in [p], text


def test_default_text_enum_members_and_a_graph_values_text():
    shades = [Shade.DARK] * 5 + [Shade.LIGHT] * 3  # the member changes: its text is the new one
    calls = [lambda s, k=k: (random_array(k, (3,)), s["p"], shades[k]) for k in range(8)]
    check(lambda: (plain_text, {"p": Plain()}), calls, min_graph_calls=4)


def read_text(x):
    text = str(float(x.sum()))
    return len(text), text == "1.0", x


def test_a_graph_values_text_read_as_a_string_stays_eager():
    jf = check(lambda: (read_text, None), [lambda s, k=k: (random_array(k, (3,)),) for k in range(6)],
               min_graph_calls=0)
    assert fallback_reasons(jf) == {"data-dependent-python"}, jf.explain()
