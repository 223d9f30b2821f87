"""optim: three update steps of each optimizer against a hand-written NumPy reference."""
import numpy as np
import pytest

from janus_like import F, Variable, optim

STEPS = 3


def _problem(seed=0, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    start = rng.standard_normal(shape).astype(np.float32)
    grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(STEPS)]
    return start, grads


def _run(opt, start, grads):
    """Apply `grads` one step at a time; returns the float32 parameter after every step."""
    var = Variable(start.copy())
    history = []
    for g in grads:
        opt.apply_gradients([(g, var)])
        assert var.dtype == np.float32  # never promoted by a float64 scalar
        history.append(var.numpy().copy())
    return var, history


def _compare(history, reference):
    for step, (got, want) in enumerate(zip(history, reference), 1):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6, err_msg=f"step {step}")


# ------------------------------------------------------------------ NumPy references (float64)
def sgd_reference(start, grads, lr, momentum=0.0, weight_decay=0.0, nesterov=False):
    p, buf, out = start.astype(np.float64), np.zeros(start.shape), []
    for g in grads:
        g = g + weight_decay * p
        if momentum:
            buf = momentum * buf + g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def adam_reference(start, grads, lr, beta1, beta2, eps):
    p, m, v, out = start.astype(np.float64), np.zeros(start.shape), np.zeros(start.shape), []
    for t, g in enumerate(grads, 1):
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def adagrad_reference(start, grads, lr, initial, eps):
    p, acc, out = start.astype(np.float64), np.full(start.shape, initial), []
    for g in grads:
        acc = acc + g * g
        p = p - lr * g / (np.sqrt(acc) + eps)
        out.append(p)
    return out


def rmsprop_reference(start, grads, lr, rho, momentum, eps):
    p, ms, buf, out = start.astype(np.float64), np.zeros(start.shape), np.zeros(start.shape), []
    for g in grads:
        ms = rho * ms + (1 - rho) * g * g
        step = g / (np.sqrt(ms) + eps)
        if momentum:
            buf = momentum * buf + step
            step = buf
        p = p - lr * step
        out.append(p)
    return out


# ------------------------------------------------------------------ against the references
@pytest.mark.parametrize("momentum, weight_decay, nesterov", [
    (0.0, 0.0, False), (0.9, 0.0, False), (0.9, 0.0, True), (0.0, 0.1, False), (0.8, 0.05, True),
])
def test_sgd_matches_reference(momentum, weight_decay, nesterov):
    start, grads = _problem(1)
    opt = optim.SGD(lr=0.1, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    var, history = _run(opt, start, grads)
    _compare(history, sgd_reference(start, grads, 0.1, momentum, weight_decay, nesterov))
    if momentum:
        assert opt.get_slot(var, "momentum").dtype == np.float32
    else:
        assert var not in opt._slots  # plain SGD keeps no state per variable


@pytest.mark.parametrize("lr, beta1, beta2, eps", [(1e-3, 0.9, 0.999, 1e-8), (0.05, 0.5, 0.9, 1e-3)])
def test_adam_matches_reference_with_bias_correction(lr, beta1, beta2, eps):
    start, grads = _problem(2)
    opt = optim.Adam(lr=lr, beta1=beta1, beta2=beta2, eps=eps)
    var, history = _run(opt, start, grads)
    _compare(history, adam_reference(start, grads, lr, beta1, beta2, eps))
    # bias correction makes the first step about lr in size whatever the gradient scale
    first = np.abs(history[0] - start)
    np.testing.assert_allclose(first, lr * np.abs(grads[0]) / (np.abs(grads[0]) + eps), rtol=1e-4)
    assert opt.get_slot(var, "m").dtype == np.float32 and opt.get_slot(var, "v").dtype == np.float32


@pytest.mark.parametrize("initial", [0.0, 0.1])
def test_adagrad_matches_reference(initial):
    start, grads = _problem(3)
    opt = optim.Adagrad(lr=0.1, initial_accumulator_value=initial)
    _, history = _run(opt, start, grads)
    _compare(history, adagrad_reference(start, grads, 0.1, initial, 1e-10))


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_rmsprop_matches_reference(momentum):
    start, grads = _problem(4)
    opt = optim.RMSprop(lr=0.01, rho=0.9, momentum=momentum, eps=1e-8)
    _, history = _run(opt, start, grads)
    _compare(history, rmsprop_reference(start, grads, 0.01, 0.9, momentum, 1e-8))


# ------------------------------------------------------------------ the state contract
ALL = [
    lambda: optim.SGD(0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda: optim.Adam(0.01),
    lambda: optim.Adagrad(0.1),
    lambda: optim.RMSprop(0.01, momentum=0.5),
]


@pytest.mark.parametrize("make", ALL, ids=["sgd", "adam", "adagrad", "rmsprop"])
def test_python_attributes_never_change_only_variables_do(make):
    opt = make()
    a, b = Variable(np.ones(3, np.float32)), Variable(np.ones((2, 2), np.float32))
    opt.apply_gradients([(np.ones(3, np.float32), a), (np.ones((2, 2), np.float32), b)])

    def plain_attributes():
        return {k: v for k, v in vars(opt).items() if k != "_slots" and not isinstance(v, Variable)}

    before = plain_attributes()
    slot_ids = [id(s) for s in opt.variables()]
    for _ in range(3):
        opt.apply_gradients([(np.ones(3, np.float32), a), (np.ones((2, 2), np.float32), b)])
    assert plain_attributes() == before
    assert [id(s) for s in opt.variables()] == slot_ids  # slots made once, then updated in place
    assert all(isinstance(v, float) for k, v in before.items() if k in ("lr", "momentum", "beta1", "rho"))
    assert opt.iterations.dtype == np.int64 and int(opt.iterations) == 4
    assert all(not s.trainable for s in opt.variables())


def test_none_gradients_are_skipped():
    opt = optim.Adam(0.1)
    used, unused = Variable(np.ones(2, np.float32)), Variable(np.ones(2, np.float32))
    opt.apply_gradients([(np.ones(2, np.float32), used), (None, unused)])
    np.testing.assert_array_equal(unused.numpy(), [1.0, 1.0])
    assert unused not in opt._slots and used in opt._slots
    assert not np.array_equal(used.numpy(), [1.0, 1.0])
    with pytest.raises(KeyError):
        opt.get_slot(unused, "m")


def test_float64_parameters_stay_float64():
    var = Variable(np.ones(2, np.float64))
    opt = optim.Adam(0.1)
    opt.apply_gradients([(np.ones(2), var)])
    assert var.dtype == np.float64 and opt.get_slot(var, "v").dtype == np.float64
    np.testing.assert_allclose(var.numpy(), 0.9, rtol=1e-7)  # 1 - lr*g/(|g|+eps), in double


def test_minimize_one_quadratic():
    w = Variable(np.array([3.0, -2.0], np.float32))
    opt = optim.SGD(0.25)
    loss = opt.minimize(lambda: F.sum(F.square(w)), [w])
    assert float(loss) == 13.0
    np.testing.assert_allclose(w.numpy(), [1.5, -1.0])  # w - 0.25 * 2w


def test_nesterov_requires_momentum():
    with pytest.raises(ValueError, match="momentum"):
        optim.SGD(0.1, nesterov=True)
