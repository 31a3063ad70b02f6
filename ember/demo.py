"""A short tour of ember's mechanisms: ``python -m ember.demo`` (or ``make demo``).

Views sharing one storage, writes through views and the version counter, contiguity and
copies, ``view`` versus ``reshape``, the meta device, and a trace of the dispatcher at work.
"""

from __future__ import annotations

import ember
from ember.utils.dispatch import trace


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def describe(name: str, t: ember.Tensor, base: ember.Tensor) -> None:
    same = t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    print(f"  {name:<14} shape={list(t.shape)!s:<9} stride={t.stride()!s:<10} "
          f"offset={t.storage_offset():<2} contiguous={t.is_contiguous()!s:<5}  "
          f"same storage as x: {same}")


def views() -> ember.Tensor:
    section("one storage, many views")
    x = ember.arange(12.0).reshape(3, 4)
    print("x =", x)
    for name, v in [("x", x), ("x.t()", x.t()), ("x[1:, ::2]", x[1:, ::2]),
                    ("x[2]", x[2]), ("x.view(2, 6)", x.view(2, 6)),
                    ("x.unsqueeze(0)", x.unsqueeze(0))]:
        describe(name, v, x)
    return x


def writes(x: ember.Tensor) -> None:
    section("a write through a view is a write to the base")
    col = x[:, 1]
    print(f"  col = x[:, 1] -> {col.tolist()}, version {x._version}")
    col.mul_(100)
    print(f"  col.mul_(100)  -> x[:, 1] is now {x[:, 1].tolist()}")
    print(f"  x._version = {x._version}, col._version = {col._version}  (one shared counter)")


def contiguity(x: ember.Tensor) -> None:
    section("non-contiguous results and copies")
    t = x.t()
    print(f"  t = x.t(): contiguous={t.is_contiguous()}, stride={t.stride()}")
    c = t.contiguous()
    print(f"  t.contiguous(): a copy? {c.data_ptr() != t.data_ptr()}, stride={c.stride()}")
    print(f"  x.contiguous() is x: {x.contiguous() is x}  (no copy when already dense)")
    try:
        t.view(12)
    except RuntimeError as err:
        print(f"  t.view(12) raises RuntimeError:\n    {str(err).splitlines()[0]}")
    r = t.reshape(12)
    same = r.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    print(f"  t.reshape(12) copies instead: shares storage with x: {same}")
    print(f"  x.reshape(2, 6) is a view:     shares storage with x: "
          f"{x.reshape(2, 6).untyped_storage().data_ptr() == x.untyped_storage().data_ptr()}")


def meta() -> None:
    section("the meta device: shapes without data")
    batch = ember.empty(64, 784, device="meta")
    w1, w2 = ember.empty(784, 256, device="meta"), ember.empty(256, 10, device="meta")
    hidden = (batch @ w1).relu()
    logits = hidden @ w2
    print(f"  (64x784 @ 784x256).relu() @ 256x10 -> {list(logits.shape)} on {logits.device}, "
          f"{logits.nbytes} bytes described, none allocated")
    try:
        batch @ w2
    except RuntimeError as err:
        print(f"  shape errors surface on meta too: {err}")


def dispatch() -> None:
    section("every call goes through the dispatcher")
    x = ember.arange(8.0).reshape(2, 4)
    w = ember.ones(4, 3, requires_grad=True)
    print("  with ember.utils.dispatch.trace() as t:\n"
          "      y = (x @ w).relu().sum()      # x: (2, 4); w: (4, 3), requires_grad\n"
          "      z = ember.zeros(2)            # a factory: BackendSelect picks the backend")
    with trace(print=False) as t:
        (x @ w).relu().sum()
        ember.zeros(2)
    for event in t.events:
        shapes = ", ".join(str(a) for a in event.args if hasattr(a, "shape"))
        print(f"    {event.name:<16} {' -> '.join(event.path):<24} {shapes}".rstrip())


def compiler() -> None:
    section("ember.compile: a graph, its guards, a recompile, a graph break")
    from ember.compiler.explain import collecting

    def f(x, y):
        return (x + y).relu() * 2

    x, y = ember.randn(3), ember.randn(3)
    report = ember.compiler.explain(f)(x, y)
    print("  def f(x, y): return (x + y).relu() * 2   # captured as one graph:")
    print("\n".join("    " + ln for ln in report.graphs[0].code.rstrip().splitlines()))
    print("  guarded by:")
    print("\n".join("    " + g for g in report.guards[0]))
    fast = ember.compile(f)
    with collecting() as events:
        fast(x, y)
        fast(ember.randn(4), ember.randn(4))  # a new shape fails TENSOR_MATCH: recompile
    for where, why in events.recompiles:
        print(f"  recompile of {where}:\n    {why}")

    def g(x):
        scale = x.abs().sum().item()  # reads tensor data: the graph ends here
        return x / scale

    brk = ember.compiler.explain(g)(x).break_reasons[0]
    frame = brk.user_stack[-1]
    print(f"  graph break: {brk.reason}\n    line {frame.lineno}: {frame.line}")
    if brk.hint:
        print(f"    hint: {brk.hint}")


def main() -> None:
    print(f"ember {ember.__version__}: a PyTorch-compatible deep-learning framework core")
    x = views()
    writes(x)
    contiguity(x)
    meta()
    dispatch()
    compiler()


if __name__ == "__main__":
    main()
