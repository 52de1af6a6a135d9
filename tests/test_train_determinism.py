"""Training on CPU runs with torch's ordered kernels: the backward of advanced indexing (HNCSE-HNM's
mixed negatives) then gives the same gradient bits every time, and the setting is restored after."""

from __future__ import annotations

import torch

from hardneg.train.determinism import ordered_cpu_kernels


def _index_backward_grads(repeats: int) -> set[bytes]:
    gen = torch.Generator().manual_seed(0)
    p0 = torch.randn(8, 384, generator=gen)
    idx = torch.randint(8, (8, 40), generator=gen)  # many repeats of each row: 320 adds into 8 rows
    upstream = torch.randn(8, 40, 384, generator=gen)
    seen = set()
    for r in range(repeats):
        _spacer = torch.empty(1000 * r + 7)
        p = p0.clone().requires_grad_()
        (p[idx] * upstream).sum().backward()
        seen.add(p.grad.numpy().tobytes())
    return seen


def test_ordered_kernels_give_one_gradient_and_are_restored():
    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))  # the unordered kernel is the multi-threaded one
    try:
        before = torch.are_deterministic_algorithms_enabled()
        grads = ordered_cpu_kernels(_index_backward_grads)(20)
        assert len(grads) == 1
        assert torch.are_deterministic_algorithms_enabled() == before
    finally:
        torch.set_num_threads(threads)


def test_the_setting_is_restored_after_an_error():
    def boom():
        assert torch.are_deterministic_algorithms_enabled() or torch.cuda.is_available()
        raise RuntimeError("x")

    before = torch.are_deterministic_algorithms_enabled()
    try:
        ordered_cpu_kernels(boom)()
    except RuntimeError:
        pass
    assert torch.are_deterministic_algorithms_enabled() == before
