"""nn: parameter discovery, checkpoints, layer shapes, recurrent-cell gradients, dropout."""
import numpy as np
import pytest

import janus_like as jl
from janus_like import F, GradientTape, Variable, nn

from gradcheck import assert_variable_gradients


class Block(nn.Module):
    def __init__(self, rng):
        self.fc = nn.Linear(3, 4, rng=rng)
        self.scale = Variable(np.float32(2.0), name="scale")

    def forward(self, x):
        return self.fc(x) * self.scale


class Tree(nn.Module):
    """Every container kind parameters() must look into, plus a shared layer and a constant."""

    def __init__(self, rng):
        self.first = Block(rng)
        self.blocks = [Block(rng), Block(rng)]
        self.heads = {"a": nn.Linear(4, 2, rng=rng), "b": nn.Linear(4, 1, bias=False, rng=rng)}
        self.pair = (Variable(np.zeros(2, np.float32)), nn.ReLU())
        self.shared = self.first  # reached twice: its variables must appear once
        self.running = Variable(np.zeros(4, np.float32), trainable=False)
        self.note = "not a parameter"
        self.constant = jl.tensor(np.ones(3))  # a Tensor, not a Variable: not a parameter

    def forward(self, x):
        return x


def test_parameters_order_names_and_no_duplicates():
    model = Tree(np.random.default_rng(0))
    names = [name for name, _ in model.named_parameters()]
    assert names == [
        "first.fc.weight", "first.fc.bias", "first.scale",
        "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.scale",
        "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.scale",
        "heads.a.weight", "heads.a.bias", "heads.b.weight",
        "pair.0",
    ]
    params = model.parameters()
    assert len({id(p) for p in params}) == len(params)
    assert [id(p) for p in model.trainable_variables] == [id(p) for p in params]
    assert params[0] is model.first.fc.weight
    # non-trainable Variables are state (checkpointed) but not parameters
    assert [name for name, _ in model.named_variables()][-1] == "running"
    assert "running" in model.state_dict()


def test_tied_weight_appears_once():
    rng = np.random.default_rng(0)
    a, b = nn.Linear(3, 3, rng=rng), nn.Linear(3, 3, rng=rng)
    b.weight = a.weight
    model = nn.Sequential(a, b)
    assert [n for n, _ in model.named_parameters()] == ["layers.0.weight", "layers.0.bias", "layers.1.bias"]


def test_train_eval_reach_every_submodule():
    model = Tree(np.random.default_rng(0))
    assert model.eval() is model
    assert all(not m.training for m in model.modules())
    assert model.heads["a"].training is False and model.pair[1].training is False
    model.train()
    assert all(m.training for m in model.modules())


def test_state_dict_round_trip_copies_values():
    rng = np.random.default_rng(0)
    model = Tree(rng)
    saved = model.state_dict()
    assert all(isinstance(v, np.ndarray) for v in saved.values())
    before = model.first.fc.weight.numpy().copy()
    model.first.fc.weight.assign_add(1.0)
    np.testing.assert_array_equal(saved["first.fc.weight"], before)  # a copy, not a view

    other = Tree(np.random.default_rng(1))
    assert not np.array_equal(other.first.fc.weight.numpy(), before)
    other.load_state_dict(saved)
    for name, value in other.state_dict().items():
        np.testing.assert_array_equal(value, saved[name])
        assert value.dtype == saved[name].dtype


def test_load_state_dict_shape_mismatch_names_parameter_and_shapes():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    state = model.state_dict()
    state["layers.1.weight"] = np.zeros((2, 4), np.float32)
    untouched = model.layers[0].weight.numpy().copy()
    state["layers.0.weight"] = untouched + 1
    with pytest.raises(ValueError, match=r"'layers\.1\.weight'.*\(4, 2\).*\(2, 4\)"):
        model.load_state_dict(state)
    # nothing was assigned: the check runs before any update
    np.testing.assert_array_equal(model.layers[0].weight.numpy(), untouched)


def test_load_state_dict_dtype_missing_and_unexpected_keys():
    model = nn.Linear(3, 2)
    state = model.state_dict()
    with pytest.raises(ValueError, match=r"'weight'.*float32.*float64"):
        model.load_state_dict({**state, "weight": state["weight"].astype(np.float64)})
    with pytest.raises(ValueError, match=r"missing keys \['bias'\].*unexpected keys \['extra'\]"):
        model.load_state_dict({"weight": state["weight"], "extra": np.zeros(1)})
    new_weight = np.full((3, 2), 7.0, np.float32)
    model.load_state_dict({"weight": new_weight}, strict=False)
    np.testing.assert_array_equal(model.weight.numpy(), new_weight)


def test_module_call_runs_forward_with_arguments():
    class Scaled(nn.Module):
        def forward(self, x, factor=2.0):
            return F.mul(x, factor)

    assert float(Scaled()(jl.tensor(3.0), factor=4.0)) == 12.0
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1.0)


# ------------------------------------------------------------------ init
@pytest.mark.parametrize("initializer", [nn.init.glorot_uniform, nn.init.he_normal, nn.init.normal])
def test_initializers_use_the_given_generator_not_the_global_one(initializer):
    np.random.seed(123)
    global_state = np.random.get_state()[1].copy()
    a = initializer((5, 4), rng=np.random.default_rng(7))
    b = initializer((5, 4), rng=np.random.default_rng(7))
    c = initializer((5, 4))  # default: a Generator seeded 0
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, initializer((5, 4), rng=np.random.default_rng(0)))
    assert a.dtype == np.float32 and initializer((2,), np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.random.get_state()[1], global_state)


def test_initializer_scales():
    rng = np.random.default_rng(0)
    w = nn.init.glorot_uniform((200, 300), rng=rng)
    assert np.abs(w).max() <= np.sqrt(6 / 500)
    conv = nn.init.he_normal((64, 16, 3, 3), rng=rng)
    assert abs(conv.std() - np.sqrt(2 / (16 * 9))) < 0.01
    assert nn.init.fans((64, 16, 3, 3)) == (144, 576)
    np.testing.assert_array_equal(nn.init.zeros((2, 3)), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(nn.init.ones((2,), np.int64), np.ones(2, np.int64))


# ------------------------------------------------------------------ layers
def test_linear_sequential_shapes_and_values():
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(4, 8, rng=rng), nn.Tanh(), nn.Linear(8, 2, bias=False, rng=rng))
    x = rng.standard_normal((5, 4)).astype(np.float32)
    out = model(x)
    w0, b0, w1 = (p.numpy() for p in model.parameters())
    np.testing.assert_allclose(out.numpy(), np.tanh(x @ w0 + b0) @ w1, rtol=1e-5, atol=1e-6)
    assert out.dtype == np.float32 and len(model) == 3 and model[1].__class__ is nn.Tanh


def test_embedding_flatten_relu_sigmoid():
    emb = nn.Embedding(10, 3, rng=np.random.default_rng(0))
    ids = np.array([[1, 2], [9, 1]])
    out = emb(ids)
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy()[1, 1], emb.weight.numpy()[1])
    assert nn.Flatten()(out).shape == (2, 6)
    np.testing.assert_array_equal(nn.ReLU()(np.array([-1.0, 2.0])).numpy(), [0.0, 2.0])
    assert float(nn.Sigmoid()(np.float64(0.0))) == 0.5


def test_embedding_gradient_accumulates_repeated_ids():
    emb = nn.Embedding(4, 2)
    with GradientTape() as tape:
        loss = F.sum(emb(np.array([1, 1, 3])))
    (g,) = tape.gradient(loss, emb.parameters())
    np.testing.assert_array_equal(g.numpy(), [[0, 0], [2, 2], [0, 0], [1, 1]])


def test_recurrent_cells_shapes_and_dtype():
    lstm = nn.LSTMCell(3, 5)
    x = np.ones((2, 3), np.float32)
    h, c = lstm(x, lstm.initial_state(2))
    assert h.shape == c.shape == (2, 5) and h.dtype == np.float32
    h, c = lstm(x, (h, c))  # feeds its own state back
    assert h.shape == (2, 5)
    # forget-gate bias starts at 1, the others at 0
    np.testing.assert_array_equal(lstm.b.numpy(), np.repeat([0.0, 1.0, 0.0, 0.0], 5))
    gru = nn.GRUCell(3, 4)
    h = gru(x, gru.initial_state(2))
    assert h.shape == (2, 4) and h.dtype == np.float32
    assert [n for n, _ in gru.named_parameters()] == ["w_x", "w_h", "b_x", "b_h"]


def _finite_difference_check(cell, loss_of_cell, eps=1e-6, tol=1e-7):
    """Compare tape gradients of loss_of_cell() w.r.t. every parameter with central differences."""
    params = cell.parameters()
    with GradientTape() as tape:
        loss = loss_of_cell()
    assert_variable_gradients(params, tape.gradient(loss, params), loss_of_cell, eps, tol)


def test_lstm_cell_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    cell = nn.LSTMCell(3, 2, rng=rng, dtype=np.float64)
    cell.b.assign(rng.standard_normal(8))
    x = rng.standard_normal((4, 3))
    h0, c0 = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    r_h, r_c = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))

    def loss():
        h, c = cell(x, (h0, c0))
        h, c = cell(x, (h, c))  # two steps, so gradients flow through the recurrent path
        return F.add(F.sum(F.mul(h, r_h)), F.sum(F.mul(c, r_c)))

    _finite_difference_check(cell, loss)


def test_gru_cell_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    cell = nn.GRUCell(3, 2, rng=rng, dtype=np.float64)
    x, h0, r = rng.standard_normal((4, 3)), rng.standard_normal((4, 2)), rng.standard_normal((4, 2))

    def loss():
        return F.sum(F.mul(cell(x, cell(x, h0)), r))

    _finite_difference_check(cell, loss)


# ------------------------------------------------------------------ dropout
def test_dropout_is_deterministic_for_a_seed_and_scales_kept_units():
    x = np.ones((50, 40), np.float32)
    a = nn.Dropout(0.25, np.random.default_rng(5))
    b = nn.Dropout(0.25, np.random.default_rng(5))
    first, again = a(x).numpy(), b(x).numpy()
    np.testing.assert_array_equal(first, again)
    assert set(np.unique(first)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((first == 0).mean() - 0.25) < 0.03
    assert first.dtype == np.float32
    assert not np.array_equal(a(x).numpy(), first)  # the generator advances between calls


def test_dropout_eval_is_identity_and_leaves_generator_alone():
    rng = np.random.default_rng(5)
    drop = nn.Dropout(0.5, rng).eval()
    state = rng.bit_generator.state
    x = jl.tensor(np.arange(6.0))
    assert drop(x) is x
    assert rng.bit_generator.state == state
    assert nn.Dropout(0.0)(x) is x
    with pytest.raises(ValueError, match="rate"):
        nn.Dropout(1.0)


def test_dropout_does_not_touch_global_rng():
    np.random.seed(0)
    before = np.random.get_state()[1].copy()
    nn.Dropout(0.5, np.random.default_rng(1))(np.ones(10))
    np.testing.assert_array_equal(np.random.get_state()[1], before)


# ------------------------------------------------------------------ convolution layers
def _need_conv():
    if not hasattr(F, "conv2d"):
        pytest.skip("conv ops not available yet")


def test_conv2d_matches_direct_convolution():
    _need_conv()
    rng = np.random.default_rng(0)
    conv = nn.Conv2D(2, 3, kernel_size=3, stride=2, padding=1, rng=rng)
    conv.bias.assign(rng.standard_normal(3))
    x = rng.standard_normal((2, 2, 7, 7)).astype(np.float32)
    out = conv(x).numpy()
    w, b = conv.weight.numpy(), conv.bias.numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((2, 3, 4, 4), np.float32)
    for i in range(4):
        for j in range(4):
            window = padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            expected[:, :, i, j] = np.einsum("nchw,ochw->no", window, w) + b
    assert out.shape == (2, 3, 4, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    assert conv.weight.shape == (3, 2, 3, 3)


def test_pooling_layers():
    _need_conv()
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    np.testing.assert_array_equal(nn.MaxPool2D(2)(x).numpy(), x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    np.testing.assert_allclose(nn.AvgPool2D(2)(x).numpy(), x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))
    assert nn.MaxPool2D(3, stride=1)(x).shape == (1, 2, 2, 2)
