"""Each objective and its gradient against values derived by hand on tiny tensors.

All inputs are unit vectors, so cos(a, b) = a.b and d cos(a,b)/da = b - cos(a,b) a: the
expected gradients below are those chain rules written out, independent of the modules.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hardneg.train.objectives import (
    BidirectionalMargin,
    HiNCE,
    InfoNCE,
    ListMLESAN,
    RecallLoss,
    TwoWayMaxMargin,
    listmle,
)

A = np.array([[1.0, 0.0], [0.0, 1.0]])
P = np.array([[1.0, 0.0], [0.6, 0.8]])
NEG = np.array([[0.8, 0.6], [0.0, -1.0]])


def t(x):
    return torch.tensor(x, dtype=torch.float64, requires_grad=True)


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def cos_grads(dl_ds, left, right):
    """Chain rule for S = left @ right.T with unit rows: grads wrt left and right."""
    S = left @ right.T
    g_left = dl_ds @ right - (dl_ds * S).sum(1, keepdims=True) * left
    g_right = dl_ds.T @ left - (dl_ds * S).sum(0)[:, None] * right
    return g_left, g_right


def test_infonce_value_and_gradient():
    tau = 0.5
    a, p = t(A), t(P)
    loss = InfoNCE(tau)(a, p)
    # S = [[1, .6], [0, .8]]
    expected = 0.5 * ((-2 + math.log(math.exp(2) + math.exp(1.2))) + (-1.6 + math.log(1 + math.exp(1.6))))
    assert loss.item() == pytest.approx(expected, abs=1e-12)
    loss.backward()
    S = A @ P.T
    dl_ds = np.stack([softmax(S[i] / tau) - np.eye(2)[i] for i in range(2)]) / tau / 2
    ga, gp = cos_grads(dl_ds, A, P)
    np.testing.assert_allclose(a.grad.numpy(), ga, atol=1e-12)
    np.testing.assert_allclose(p.grad.numpy(), gp, atol=1e-12)


def test_infonce_scale_invariant_and_rejects_bad_tau():
    a, p = t(A * 3.0), t(P * 0.5)
    assert InfoNCE(0.5)(a, p).item() == pytest.approx(InfoNCE(0.5)(t(A), t(P)).item(), abs=1e-12)
    with pytest.raises(ValueError, match="temperature"):
        InfoNCE(0.0)


def test_hince_value_and_gradient():
    tau1, tau2 = 0.5, 0.25
    a, p, n = t(A), t(P), t(NEG)
    loss = HiNCE(tau1, tau2)(a, p, n)
    S, Sn = A @ P.T, A @ NEG.T  # Sn = [[.8, 0], [.6, -1]]
    rows = [np.concatenate([S[i] / tau1, Sn[i] / tau2]) for i in range(2)]
    expected = np.mean([-(r[i]) + math.log(np.exp(r).sum()) for i, r in enumerate(rows)])
    # spelled out for row 0: -2 + log(e^2 + e^1.2 + e^3.2 + e^0)
    assert -2 + math.log(math.exp(2) + math.exp(1.2) + math.exp(3.2) + 1) == pytest.approx(
        -rows[0][0] + math.log(np.exp(rows[0]).sum())
    )
    assert loss.item() == pytest.approx(expected, abs=1e-12)
    loss.backward()
    probs = np.stack([softmax(r) for r in rows])
    dl_dpos = (probs[:, :2] - np.eye(2)) / tau1 / 2
    dl_dneg = probs[:, 2:] / tau2 / 2
    ga1, gp = cos_grads(dl_dpos, A, P)
    ga2, gn = cos_grads(dl_dneg, A, NEG)
    np.testing.assert_allclose(a.grad.numpy(), ga1 + ga2, atol=1e-12)
    np.testing.assert_allclose(p.grad.numpy(), gp, atol=1e-12)
    np.testing.assert_allclose(n.grad.numpy(), gn, atol=1e-12)


def test_hince_equals_infonce_when_negatives_vanish():
    # With tau2 huge the SAN columns add N*e^0 to every denominator: a known constant shift.
    a, p, n = t(A), t(P), t(NEG)
    h = HiNCE(0.5, 1e12)(a, p, n).item()
    S = A @ P.T / 0.5
    expected = np.mean([-S[i, i] + math.log(np.exp(S[i]).sum() + 2) for i in range(2)])
    assert h == pytest.approx(expected, abs=1e-9)


def test_bml_value_and_gradient_each_branch():
    alpha, beta = 0.1, 0.3
    a, p, n = t(A), t(P), t(NEG)
    loss = BidirectionalMargin(alpha, beta)(a, p, n)
    # row 0: cos(a,n)=.8, cos(a,p)=1 -> d=-.2: relu(-.1)=0, relu(.2-.3)=0 -> 0 (inside the band)
    # row 1: cos(a,n)=-1, cos(a,p)=.8 -> d=-1.8: relu(-1.7)=0, relu(1.8-.3)=1.5
    assert loss.item() == pytest.approx((0 + 1.5) / 2, abs=1e-12)
    loss.backward()
    # only row 1's second branch is active: dL/dd = -1/2, dd/dcos_n = 1, dd/dcos_p = -1
    g_a1 = -0.5 * ((NEG[1] - (-1.0) * A[1]) - (P[1] - 0.8 * A[1]))
    np.testing.assert_allclose(a.grad.numpy(), np.stack([np.zeros(2), g_a1]), atol=1e-12)
    np.testing.assert_allclose(p.grad.numpy()[1], 0.5 * (A[1] - 0.8 * P[1]), atol=1e-12)
    np.testing.assert_allclose(n.grad.numpy()[1], -0.5 * (A[1] - (-1.0) * NEG[1]), atol=1e-12)


def test_bml_first_branch_when_negative_too_close():
    # negative closer than positive: d = cos(a,n) - cos(a,p) = 1 - .6 = .4 -> relu(.4+.1) = .5
    a = t([[1.0, 0.0]])
    p = t([[0.6, 0.8]])
    n = t([[1.0, 0.0]])
    loss = BidirectionalMargin(0.1, 0.3)(a, p, n)
    assert loss.item() == pytest.approx(0.5, abs=1e-12)
    loss.backward()
    np.testing.assert_allclose(p.grad.numpy()[0], -(np.array([1.0, 0.0]) - 0.6 * np.array([0.6, 0.8])), atol=1e-12)
    with pytest.raises(ValueError, match="alpha <= beta"):
        BidirectionalMargin(0.5, 0.1)


def test_two_way_max_margin_matches_osscse_eq3():
    alpha, beta = 0.05, 0.2
    a = t([[1.0, 0.0], [0.0, 1.0]])
    para = t([[0.6, 0.8], [0.0, 1.0]])
    neg = t([[0.8, 0.6], [0.6, 0.8]])
    loss = TwoWayMaxMargin(alpha, beta)(a, para, neg)
    # row 0: sim_n=.8, sim_p=.6: max(.8-.6+.05,0)=.25, max(.6-.8-.2,0)=0
    # row 1: sim_n=.8, sim_p=1: max(-.2+.05,0)=0, max(.2-.2,0)=0
    assert loss.item() == pytest.approx(0.25 / 2, abs=1e-12)
    loss.backward()
    # row 0: dL/dsim_n = +1/2, dL/dsim_p = -1/2
    exp_para0 = -0.5 * (np.array([1.0, 0.0]) - 0.6 * np.array([0.6, 0.8]))
    exp_neg0 = 0.5 * (np.array([1.0, 0.0]) - 0.8 * np.array([0.8, 0.6]))
    np.testing.assert_allclose(para.grad.numpy()[0], exp_para0, atol=1e-12)
    np.testing.assert_allclose(neg.grad.numpy()[0], exp_neg0, atol=1e-12)


def test_recall_loss_value_and_gradient():
    w = torch.nn.Parameter(torch.tensor([[1.0, 2.0]], dtype=torch.float64))
    b = torch.nn.Parameter(torch.tensor([0.5], dtype=torch.float64))
    rl = RecallLoss([("w", w), ("b", b)], gamma=2e-3)
    assert rl([w, b]).item() == 0.0
    with torch.no_grad():
        w += torch.tensor([[0.1, -0.2]], dtype=torch.float64)
        b -= 0.3
    loss = rl([w, b])
    # gamma/2 * (0.01 + 0.04 + 0.09) = 1e-3 * 0.14
    assert loss.item() == pytest.approx(1.4e-4, abs=1e-12)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2e-3 * np.array([[0.1, -0.2]]), atol=1e-9)
    np.testing.assert_allclose(b.grad.numpy(), [2e-3 * -0.3], atol=1e-9)


def test_listmle_value_and_gradient_by_hand():
    s = torch.tensor([[1.0, 2.0, 0.5]], dtype=torch.float64, requires_grad=True)
    teacher = torch.tensor([[0.2, 0.1, 0.9]])  # teacher order: index 2, 0, 1
    loss = listmle(s, teacher)
    e = math.exp
    # -log P = [log(e^.5+e^1+e^2) - .5] + [log(e^1+e^2) - 1] + [log(e^2) - 2]
    expected = (math.log(e(0.5) + e(1) + e(2)) - 0.5) + (math.log(e(1) + e(2)) - 1) + 0.0
    assert loss.item() == pytest.approx(expected, abs=1e-12)
    loss.backward()
    z1 = e(0.5) + e(1) + e(2)
    z2 = e(1) + e(2)
    # d/ds_k = sum over the tails containing k of softmax_k - 1 (for the item placed at that step)
    g = [
        e(1) / z1 + e(1) / z2 - 1,  # index 0: in tails 1 and 2, placed 2nd
        e(2) / z1 + e(2) / z2 + 1 - 1,  # index 1: in tails 1, 2, 3, placed 3rd
        e(0.5) / z1 - 1,  # index 2: in tail 1 only, placed 1st
    ]
    np.testing.assert_allclose(s.grad.numpy()[0], g, atol=1e-12)


def test_listmle_san_module_uses_cosine_over_tau_and_checks_shapes():
    a, n = t(A), t(NEG)
    teacher = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    tau = 0.5
    loss = ListMLESAN(tau)(a, n, teacher)
    np.testing.assert_allclose(A @ NEG.T / tau, [[1.6, 0.0], [1.2, -2.0]])
    # row 0 order (1, 0): [log(e^0+e^1.6) - 0] + 0; row 1 order (0, 1): [log(e^1.2+e^-2) - 1.2]
    expected = (math.log(1 + math.exp(1.6)) + math.log(math.exp(1.2) + math.exp(-2)) - 1.2) / 2
    assert loss.item() == pytest.approx(expected, abs=1e-12)
    assert torch.autograd.gradcheck(lambda x, y: ListMLESAN(tau)(x, y, teacher), (t(A + 0.1), t(NEG + 0.2)))
    with pytest.raises(ValueError, match="teacher similarities"):
        ListMLESAN(tau)(a, n, torch.zeros(3, 2))


@pytest.mark.parametrize("name", ["infonce", "hince", "bml", "margin"])
def test_gradcheck_general_position(name):
    g = torch.Generator().manual_seed(0)
    x = [torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3)]
    fns = {
        "infonce": lambda a, p, n: InfoNCE(0.1)(a, p),
        "hince": lambda a, p, n: HiNCE(0.1, 0.2)(a, p, n),
        "bml": lambda a, p, n: BidirectionalMargin(0.1, 0.3)(a, p, n),
        "margin": lambda a, p, n: TwoWayMaxMargin(0.05, 0.2)(a, p, n),
    }
    assert torch.autograd.gradcheck(fns[name], tuple(x))
