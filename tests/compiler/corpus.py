# ruff: noqa: B002, B016, B018, B023, B904, E742, F541, F821, UP008, UP031, UP032
# (the corpus exercises these constructs on purpose)
"""A corpus of plain Python functions that the concrete interpreter must run exactly like
CPython (results, mutations of arguments, exceptions), on 3.11, 3.12 and 3.13.

``CASES`` lists ``(function, args, kwargs)``; a function may appear with several argument sets.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import math
import operator
from dataclasses import dataclass

CASES: list[tuple] = []


def case(*args, **kwargs):
    def deco(f):
        CASES.append((f, args, kwargs))
        return f
    return deco


def also(*args, **kwargs):
    def deco(f):
        CASES.append((f, args, kwargs))
        return f
    return deco


GLOBAL_LIST: list = []
SCALE = 3


# ---- arithmetic, comparisons, constants --------------------------------------------------

@case(3, 4)
def arith(a, b):
    return a + b, a - b, a * b, a / b, a // b, a % b, a ** b, -a, +b, ~a


@case(6, 3)
def bitops(a, b):
    return a & b, a | b, a ^ b, a << b, a >> 1


@case(5)
def inplace_ops(a):
    x = a
    x += 1
    x -= 2
    x *= 3
    x //= 2
    x **= 2
    x %= 7
    x <<= 2
    x >>= 1
    x |= 8
    x &= 13
    x ^= 5
    y = float(a)
    y /= 4
    return x, y


@also(1)
@also(5)
@case(20)
def chained_cmp(a):
    return 0 < a < 10, 1 <= a <= 5 != 3, a == a > -1


@case(2, 3)
def cmp_all(a, b):
    return a < b, a <= b, a == b, a != b, a > b, a >= b, a is b, a is not b


@case([1, 2, 3], 2)
def contains(xs, v):
    return v in xs, v not in xs, "a" in "abc"


@case(0)
@also(7)
def truthiness(x):
    r = []
    if x:
        r.append("t")
    if not x:
        r.append("f")
    if x and x > 3:
        r.append("big")
    if x or None:
        r.append("or")
    return r, x and 5, x or 6, not x


@case(None)
@also(4)
def none_checks(x):
    if x is None:
        return "none"
    if x is not None:
        return x * 2


@case(2.5)
def float_ops(x):
    return math.floor(x), math.ceil(x), round(x), abs(-x), divmod(7, 2), pow(2, 10, 7)


@case()
def big_constants():
    return 10 ** 20, -(2 ** 70), 1e300 * 10, 0.1 + 0.2, 3 + 4j, b"bytes", ...


@case(3)
def ternary(x):
    return "odd" if x % 2 else "even", (x if x > 2 else -x)


@case(10)
def walrus(n):
    out = []
    while (n := n - 3) > 0:
        out.append(n)
    return out, n


# ---- loops ------------------------------------------------------------------------------

@case(10)
def for_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


@case(10)
def for_break_continue(n):
    out = []
    for i in range(n):
        if i == 2:
            continue
        if i == 7:
            break
        out.append(i)
    return out


@case(5)
def for_else(n):
    for i in range(n):
        if i == 10:
            break
    else:
        return "no break", i
    return "break"


@case(5)
def while_else(n):
    i = 0
    while i < n:
        i += 1
    else:
        i += 100
    return i


@case(4)
def nested_loops(n):
    out = []
    for i in range(n):
        for j in range(i):
            if (i + j) % 3 == 0:
                continue
            out.append((i, j))
    return out


@case([3, 1, 2])
def enumerate_zip(xs):
    out = []
    for i, (a, b) in enumerate(zip(xs, reversed(xs))):
        out.append(i * a - b)
    return out


@case({"a": 1, "b": 2})
def dict_iteration(d):
    keys = []
    for k in d:
        keys.append(k)
    items = [(k, v) for k, v in d.items()]
    return keys, items, list(d.values())


@case(6)
def while_true_break(n):
    i = 0
    while True:
        i += 1
        if i >= n:
            break
    return i


@case([1, 2, 3, 4])
def loop_with_return(xs):
    for x in xs:
        if x > 2:
            return x
    return None


@case([])
def loop_empty(xs):
    r = "none"
    for x in xs:
        r = x
    return r


@case(3)
def loop_else_nested(n):
    out = []
    for i in range(n):
        for j in range(n):
            if j > i:
                break
        else:
            out.append(i)
    return out


@case(3)
def loop_try_in_loop(n):
    out = []
    for i in range(n):
        try:
            if i == 1:
                raise ValueError(i)
            out.append(i)
        except ValueError as e:
            out.append(("err", e.args))
        finally:
            out.append("f")
    return out


@case(4)
def loop_continue_finally(n):
    out = []
    for i in range(n):
        try:
            if i % 2:
                continue
            out.append(i)
        finally:
            out.append(-i)
    return out


@case(4)
def loop_break_in_with(n):
    out = []
    for i in range(n):
        with contextlib.suppress(ZeroDivisionError):
            if i == 2:
                break
            out.append(1 / (i - 1) if i != 1 else 1 // 0)
    return out


# ---- containers, unpacking, slicing -----------------------------------------------------

@case([1, 2, 3, 4, 5, 6])
def slicing(xs):
    return xs[1:3], xs[::2], xs[::-1], xs[-2:], xs[:-1], xs[1:5:2], xs[slice(2)]


@case(list(range(8)))
def slice_assign(xs):
    xs[1:3] = ["a", "b", "c"]
    del xs[0]
    xs[-1] = "end"
    del xs[::3]
    return xs


@case((1, 2, 3))
def unpacking(t):
    a, b, c = t
    (x, y), z = (a, b), c
    first, *mid, last = range(6)
    *init, tail = t
    return a, b, c, x, y, z, first, mid, last, init, tail


@case([1, 2])
def unpack_errors(xs):
    out = []
    try:
        a, b, c = xs
    except ValueError as e:
        out.append(str(e))
    try:
        (a,) = xs
    except ValueError as e:
        out.append(str(e))
    try:
        a, b = 5
    except TypeError as e:
        out.append(str(e))
    try:
        a, *b, c, d = xs
    except ValueError as e:
        out.append(str(e))
    return out


@case(3)
def build_containers(n):
    lst = [n, n + 1]
    tup = (n,)
    st = {n, n, 2}
    dct = {"a": n, "b": lst}
    dct2 = {n: 1, n + 1: 2}
    return lst, tup, sorted(st), dct, dct2, [*lst, *tup], (*lst, 9), {*lst}, {**dct, "c": 0}


@case({"x": 1})
def dict_ops(d):
    d["y"] = 2
    d.update(z=3)
    v = d.pop("x")
    d.setdefault("w", [])
    d["w"].append(v)
    del d["z"]
    return d, "y" in d, d.get("nope", 5), len(d)


@case([5, 3, 9])
def list_methods(xs):
    xs.append(1)
    xs.extend([7, 8])
    xs.insert(0, 0)
    xs.remove(9)
    p = xs.pop()
    xs.sort()
    ys = sorted(xs, reverse=True)
    return xs, ys, p, xs.index(5), xs.count(3)


@case("hello world")
def string_ops(s):
    return (s.upper(), s.split(), s[::-1], s.replace("o", "0"), "-".join(s.split()),
            s.startswith("he"), s.find("w"), s * 2, len(s), s.title(), s.strip("hd"))


@case(3)
def nested_containers(n):
    grid = [[i * j for j in range(n)] for i in range(n)]
    grid[1][2] = -1
    flat = [v for row in grid for v in row]
    return grid, flat, max(flat), min(flat), sum(flat)


@case([3, 1, 2])
def sorted_key_lambda(xs):
    return sorted(xs, key=lambda v: -v), max(xs, key=lambda v: v % 3)


@case(4)
def set_ops(n):
    a = set(range(n))
    b = {2, 3, 4, 5}
    return a | b, a & b, a - b, a ^ b, a <= b, frozenset(a) == frozenset(range(n))


@case((1, 2), (3, 4))
def tuple_concat(a, b):
    return a + b, a * 2, a < b, (a, b)[1][0]


@case([1, [2, [3, [4]]]])
def deep_index(x):
    return x[1][1][1][0], x[-1][0]


@case("abc")
def swap_vars(s):
    a, b, c = s
    a, b = b, a
    a, b, c = c, a, b
    return a + b + c


@case(5)
def star_in_calls(n):
    def f(*a, **k):
        return a, k
    args = [1, 2]
    kw = {"x": n}
    return f(*args), f(*args, 3, *args), f(**kw), f(0, *args, y=1, **kw), f(*range(n))


@case(3)
def dict_merge_error(n):
    def f(**k):
        return k
    try:
        return f(a=1, **{"a": n})
    except TypeError as e:
        return "dup" in str(e) or "multiple" in str(e)


@case([1, 2, 3])
def list_unpack_literal(xs):
    return [0, *xs, 4], (*xs,), [*xs, *xs]


@case({"a": 1}, {"b": 2})
def dict_unpack_literal(a, b):
    return {**a, **b}, {**a, "a": 5}, dict(**a, c=3)


# ---- comprehensions, generators -----------------------------------------------------------

@case(5)
def comprehensions(n):
    return ([i * i for i in range(n)], {i: i % 2 for i in range(n)}, {i % 3 for i in range(n)},
            [i for i in range(n) if i % 2 if i > 1], [(i, j) for i in range(2) for j in range(i)])


@case(4)
def genexpr(n):
    return sum(i for i in range(n)), list(x * 2 for x in range(n) if x), any(i > 2 for i in
                                                                              range(n))


@case(5)
def comprehension_closure(n):
    k = 10
    return [i + k for i in range(n)], [(lambda j: j * k)(i) for i in range(2)]


@case(3)
def comprehension_shadow(n):
    i = "outer"
    lst = [i for i in range(n)]
    return i, lst


@case(4)
def nested_comprehension(n):
    return [[j for j in range(i)] for i in range(n)]


def _gen(n):
    for i in range(n):
        yield i * 2
    return "done"


@case(4)
def call_generator(n):
    g = _gen(n)
    first = next(g)
    rest = list(g)
    return first, rest


@case(3)
def generator_send(n):
    def acc():
        total = 0
        while True:
            v = yield total
            if v is None:
                return total
            total += v
    g = acc()
    next(g)
    out = [g.send(i) for i in range(n)]
    try:
        g.send(None)
    except StopIteration as e:
        out.append(e.value)
    return out


@case(5)
def yield_from_user(n):
    def inner():
        yield from range(n)
    return list(inner())


@case(3)
def itertools_use(n):
    return (list(itertools.chain(range(n), "ab")), list(itertools.product(range(2), repeat=2)),
            list(itertools.accumulate(range(n))))


# ---- functions: defaults, kw-only, star args ---------------------------------------------

def _kwonly(a, *, b=2, c):
    return a, b, c


def _posonly(a, b=5, /, c=7):
    return a, b, c


def _varargs(*args, **kwargs):
    return args, sorted(kwargs.items())


@case(1)
def calls_kwonly(x):
    return _kwonly(x, c=3), _kwonly(x, b=9, c=0)


@case(1)
def calls_posonly(x):
    return _posonly(x), _posonly(x, 2), _posonly(x, c=1)


@case(1, 2)
def calls_varargs(a, b):
    return _varargs(), _varargs(a, b), _varargs(a, k=b), _varargs(*[a, b], **{"z": 1})


@case(1, 2, 3, 4, k=5, j=6)
def own_varargs(a, *args, **kwargs):
    return a, args, kwargs


@case(1)
@also(1, 2, 3)
@also(1, c=9)
def own_defaults(a, b=2, c=None):
    return a, b, c


@case(1, 2, 3, x=5)
@also(0)
def own_all_kinds(a, b=0, /, c=1, *args, d=4, **kw):
    return a, b, c, args, d, kw


@case(1)
def binding_errors(a):
    out = []
    for call in (lambda: _kwonly(1), lambda: _posonly(1, 2, 3, 4), lambda: _posonly(a=1),
                 lambda: _kwonly(1, 2, c=3), lambda: _kwonly(1, c=1, d=2)):
        try:
            call()
        except TypeError as e:
            out.append(str(e).split("(")[0][-30:])
    return out


def _mutable_default(x, acc=[]):  # noqa: B006 - the behaviour under test
    acc.append(x)
    return len(acc)


@case(1)
def mutable_default(x):
    return _mutable_default(x) - _mutable_default(x)


@case(3)
def recursion(n):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)
    return fact(n + 3)


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


@case(10)
def global_recursion(n):
    return _fib(n)


@case(2)
def keyword_calls(x):
    return dict(a=x, b=2), sorted([3, 1], reverse=True), int("11", base=2), "{a}-{b}".format(
        a=x, b=x * 2)


@case(5)
def functools_partial(x):
    p = functools.partial(_kwonly, c=x)
    return p(1), functools.reduce(operator.add, range(x))


# ---- closures, nonlocal, lambdas ---------------------------------------------------------

@case(3)
def closure_read(x):
    def inner(y):
        return x + y
    return inner(4)


@case(3)
def closure_nonlocal(x):
    count = 0

    def inc():
        nonlocal count
        count += x
        return count
    inc()
    inc()
    return count


@case(2)
def closure_factory(k):
    def make(m):
        def mul(v):
            return v * m * k
        return mul
    return make(3)(4), make(5)(1)


@case(3)
def closure_late_binding(n):
    fs = [lambda: i for i in range(n)]
    gs = [lambda i=i: i for i in range(n)]
    return [f() for f in fs], [g() for g in gs]


@case(2)
def lambdas(x):
    f = lambda a, b=3: a * b  # noqa: E731
    g = lambda *a, **k: (a, k)  # noqa: E731
    return f(x), f(x, b=x), g(1, z=2), (lambda: x)()


@case(1)
def cell_argument(x):
    def get():
        return x
    x = x + 10
    return get()


@case(5)
def nested_nonlocal(x):
    a = 1

    def outer():
        b = 2

        def inner():
            nonlocal a, b
            a += x
            b += a
            return a + b
        return inner() + inner(), b
    return outer(), a


@case(4)
def closure_in_loop_cell(n):
    total = 0

    def add(v):
        nonlocal total
        total += v
    for i in range(n):
        add(i)
    return total


@case(2)
def delete_cell(x):
    y = x

    def f():
        return y
    r = f()
    del y
    try:
        f()
    except NameError as e:
        return r, type(e).__name__


@case(3)
def unbound_local(x):
    if x > 5:
        z = 1
    try:
        return z
    except UnboundLocalError as e:
        return "unbound", str(e)


@case(3)
def del_local(x):
    y = x
    del y
    try:
        return y
    except UnboundLocalError:
        return "deleted"


@case(2)
def global_write(x):
    global SCALE
    old = SCALE
    SCALE = x
    r = SCALE * 2
    SCALE = old
    return r


@case(7)
def global_list_side_effect(x):
    GLOBAL_LIST.append(x)
    r = len(GLOBAL_LIST) > 0
    GLOBAL_LIST.pop()
    return r


@case(3)
def decorator_use(x):
    def deco(f):
        @functools.wraps(f)
        def w(*a):
            return f(*a) + 1
        return w

    @deco
    def g(v):
        return v * 2
    return g(x), g.__name__


@case(4)
def annotations_fn(x):
    def f(a: int, b: str = "s") -> list:
        return [a, b]
    return f(x), sorted(f.__annotations__)


@case(4)
def kwdefaults_fn(x):
    def f(a, *, b=x, c=2):
        return a + b + c
    return f(1), f(1, c=0)


# ---- exceptions ---------------------------------------------------------------------------

@case(0)
@also(1)
@also(2)
def try_except_else_finally(x):
    log = []
    try:
        if x == 1:
            raise KeyError("k")
        if x == 2:
            raise IndexError("i")
        log.append("body")
    except KeyError as e:
        log.append(("key", e.args))
    except (IndexError, TypeError):
        log.append("idx")
    else:
        log.append("else")
    finally:
        log.append("finally")
    return log


@case(1)
def exception_propagates(x):
    raise ValueError(f"bad {x}")


@case(1)
def exception_chain(x):
    try:
        try:
            1 / 0
        except ZeroDivisionError as e:
            raise ValueError("wrapped") from e
    except ValueError as e:
        return type(e.__cause__).__name__, e.__suppress_context__, type(e.__context__).__name__


@case(1)
def implicit_context(x):
    try:
        try:
            {}["a"]
        except KeyError:
            raise RuntimeError("in handler")
    except RuntimeError as e:
        return type(e.__context__).__name__, e.__cause__


@case(1)
def bare_reraise(x):
    try:
        try:
            raise TypeError("t")
        except TypeError:
            raise
    except TypeError as e:
        return str(e)


@case(1)
def finally_return_overrides(x):
    def f():
        try:
            raise ValueError
        finally:
            return "finally"  # noqa: B012
    return f()


@case(1)
def return_in_try(x):
    log = []

    def f():
        try:
            return "try"
        finally:
            log.append("fin")
    return f(), log


@case(1)
def nested_try(x):
    log = []
    try:
        try:
            raise KeyError(x)
        except KeyError:
            log.append("inner")
            raise IndexError
        finally:
            log.append("inner-finally")
    except IndexError:
        log.append("outer")
    return log


@case(1)
def exc_in_finally(x):
    try:
        try:
            pass
        finally:
            raise OSError("f")
    except OSError as e:
        return str(e)


@case(2)
def exception_var_cleared(x):
    try:
        raise ValueError(x)
    except ValueError as err:
        v = err.args
    try:
        return err  # noqa: F821
    except NameError:
        return v, "cleared"


@case(1)
def custom_exception(x):
    class MyErr(Exception):
        def __init__(self, code):
            super().__init__(f"code {code}")
            self.code = code
    try:
        raise MyErr(x + 41)
    except MyErr as e:
        return e.code, str(e)


@case(3)
def assert_stmt(x):
    try:
        assert x < 2, f"x too big: {x}"
    except AssertionError as e:
        return str(e)


@case(1)
def raise_class(x):
    try:
        raise KeyError
    except KeyError as e:
        return type(e).__name__, e.args


@case(1)
def exc_info_inside(x):
    import sys
    try:
        raise ValueError("v")
    except ValueError:
        return type(sys.exc_info()[1]).__name__


@case(1)
def exc_info_after(x):
    import sys
    try:
        raise ValueError("v")
    except ValueError:
        pass
    return sys.exc_info()[1]


@case(0)
def except_in_loop_with_continue(x):
    out = []
    for i in range(4):
        try:
            out.append(10 // i)
        except ZeroDivisionError:
            continue
        finally:
            out.append("f")
    return out


@case(1)
def return_from_except(x):
    try:
        raise ValueError
    except ValueError:
        return "from except"


@case(1)
def break_from_except(x):
    out = []
    for i in range(3):
        try:
            raise KeyError(i)
        except KeyError:
            out.append(i)
            break
    return out


@case(5)
def exception_attributes(x):
    try:
        [1, 2][x]
    except IndexError as e:
        return str(e), isinstance(e, LookupError)


@case(1)
def raise_non_exception(x):
    try:
        raise 5
    except TypeError as e:
        return str(e)


@case(1)
def catch_bad_class(x):
    try:
        try:
            raise ValueError
        except int:
            pass
    except TypeError as e:
        return str(e)


@case(1)
def exception_group_free(x):
    errs = []
    for exc in (ValueError, KeyError, ZeroDivisionError):
        try:
            raise exc("e")
        except (ValueError, KeyError) as e:
            errs.append(type(e).__name__)
        except Exception as e:  # noqa: BLE001
            errs.append("other:" + type(e).__name__)
    return errs


# ---- with ---------------------------------------------------------------------------------

class _CM:
    def __init__(self, log, swallow=False):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append(("exit", et.__name__ if et else None))
        return self.swallow


@case(0)
def with_basic(x):
    log = []
    with _CM(log) as cm:
        log.append(cm is not None)
    return log


@case(0)
def with_exception_propagates(x):
    log = []
    try:
        with _CM(log):
            raise KeyError("k")
    except KeyError:
        log.append("caught")
    return log


@case(0)
def with_swallow(x):
    log = []
    with _CM(log, swallow=True):
        raise KeyError("k")
    log.append("after")
    return log


@case(0)
def with_return_inside(x):
    log = []

    def f():
        with _CM(log):
            return "ret"
    return f(), log


@case(0)
def with_multiple(x):
    log = []
    with _CM(log), _CM(log) as b:
        log.append(type(b).__name__)
    return log


@case(0)
def contextmanager_decorator(x):
    log = []

    @contextlib.contextmanager
    def cm():
        log.append("in")
        try:
            yield 5
        finally:
            log.append("out")
    with cm() as v:
        log.append(v)
    return log


@case(0)
def with_not_cm(x):
    try:
        with 5:
            pass
    except TypeError as e:
        return "context manager" in str(e)


@case(2)
def with_nested_in_try(x):
    log = []
    try:
        with _CM(log):
            with _CM(log, swallow=True):
                1 / 0
            raise ValueError(x)
    except ValueError as e:
        log.append(e.args)
    return log


# ---- classes, super, properties ----------------------------------------------------------

class Base:
    cls_attr = 10

    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v

    @property
    def double(self):
        return self.v * 2

    @double.setter
    def double(self, val):
        self.v = val / 2

    @staticmethod
    def st(a):
        return a + 1

    @classmethod
    def cm(cls, a):
        return cls.__name__, a


class Derived(Base):
    def __init__(self, v, w):
        super().__init__(v)
        self.w = w

    def get(self):
        return super().get() + self.w

    def via_explicit_super(self):
        return super(Derived, self).get()

    def super_obj(self):
        s = super()
        return s.get()


@case(3)
def class_usage(x):
    b = Base(x)
    d = Derived(x, 2)
    d.double = 10
    return (b.get(), d.get(), b.double, d.v, Base.st(x), Derived.cm(1), d.cls_attr,
            isinstance(d, Base), issubclass(Derived, Base), type(d).__name__)


@case(3)
def super_forms(x):
    d = Derived(x, 1)
    return d.via_explicit_super(), d.super_obj(), Derived.get(d)


@case(2)
def method_super_interpreted(x):
    d = Derived(x, 5)
    return Derived.get(d), d.get()


@case(2)
def local_class_with_super(x):
    class A:
        def f(self):
            return "A"

    class B(A):
        def f(self):
            return "B" + super().f()
    return B().f() * x


@case(2)
def attribute_ops(x):
    class O:
        pass
    o = O()
    o.a = x
    o.b = [x]
    o.b.append(3)
    del o.a
    return hasattr(o, "a"), o.b, getattr(o, "c", "dflt")


@case(4)
def dunder_methods(x):
    class V:
        def __init__(self, v):
            self.v = v

        def __add__(self, o):
            return V(self.v + o.v)

        def __radd__(self, o):
            return V(self.v + o)

        def __eq__(self, o):
            return self.v == o.v

        def __len__(self):
            return self.v

        def __getitem__(self, i):
            if i >= self.v:
                raise IndexError
            return i * 10

        def __bool__(self):
            return self.v > 0

        def __iadd__(self, o):
            self.v += o
            return self
    a = V(x)
    b = a + V(1)
    c = 5 + a
    a += 2
    return b.v, c.v, a == V(x + 2), len(a), list(a), bool(V(0)), sum(V(3))


@case(2)
def dataclass_use(x):
    @dataclass
    class P:
        a: int
        b: int = 3
    p = P(x)
    return p, p == P(x, 3), p.a + p.b


@case(3)
def slots_class(x):
    class S:
        __slots__ = ("a",)

        def __init__(self, a):
            self.a = a
    s = S(x)
    try:
        s.b = 1
    except AttributeError:
        return s.a


@case(3)
def getattr_fallback(x):
    class G:
        def __getattr__(self, name):
            return name * x
    return G().ab


@case(3)
def namedtuple_use(x):
    P = collections.namedtuple("P", "a b")
    p = P(x, 2)
    a, b = p
    return p.a + p.b, p._replace(a=0), a * b


@case(2)
def class_attribute_mutation(x):
    class K:
        count = 0

        def bump(self):
            type(self).count += x
    k = K()
    k.bump()
    k.bump()
    return K.count


@case(1)
def bound_method_objects(x):
    lst = []
    app = lst.append
    app(x)
    app(x + 1)
    m = "abc".upper
    return lst, m()


# ---- f-strings and formatting -----------------------------------------------------------

@case(3.14159, "s", 42)
def fstrings(f, s, i):
    w = 8
    return (f"{f:.2f}", f"{s!r}", f"{i:>{w}}", f"{i!s:<5}|", f"{s!a}", f"{{lit}}", f"{i:#x}",
            f"{f!r:>12}", f"{'nested ' + s}", f"{i=}")


@case("x")
def format_calls(s):
    return "%s-%d" % (s, 3), "{:>4}".format(s), format(3.5, "e"), str(4), repr(s)


# ---- builtins, misc ---------------------------------------------------------------------

@case([3, 1, 2])
def builtins_misc(xs):
    return (len(xs), sum(xs), min(xs), max(xs), sorted(xs), list(reversed(xs)), any(xs),
            all(xs), list(map(str, xs)), list(filter(None, [0, 1, 2])), abs(-3), divmod(9, 4),
            isinstance(xs, list), callable(len), hash(1) == hash(1), list(range(0, 10, 3)),
            tuple(enumerate("ab")), dict(zip("ab", xs)), id(xs) == id(xs), chr(65), ord("A"))


@case(1)
def import_inside(x):
    import os.path
    from math import sqrt
    from os import path as p
    return sqrt(16) + x, os.path.join("a", "b"), p.basename("/a/b")


@case(1)
def local_import_from_package(x):
    from collections import OrderedDict
    from json import dumps
    return dumps(OrderedDict(a=x))


@case(3)
def type_conversions(x):
    return int("7") + x, float(x), str(x), bool(x), list("ab"), tuple([x]), set([x]), dict(
        a=x), complex(x, 1), bytes([65])


@case(2)
def match_statement(x):
    out = []
    for v in (0, [1, 2], {"k": x}, "s", (1, 2, 3), 2.5, Base(3)):
        match v:
            case 0:
                out.append("zero")
            case [a, b]:
                out.append(("pair", a, b))
            case {"k": kv}:
                out.append(("map", kv))
            case str() as s:
                out.append(("str", s))
            case (a, *rest):
                out.append(("seq", a, rest))
            case float(f) if f > 2:
                out.append(("float", f))
            case Base(v=vv):
                out.append(("base", vv))
            case _:
                out.append("other")
    return out


@case(5)
def lambda_default_capture(x):
    fs = {}
    for name in ("a", "b"):
        fs[name] = lambda v, name=name: name * v
    return fs["a"](x), fs["b"](2)


@case(4)
def early_returns(x):
    if x < 0:
        return "neg"
    elif x == 0:
        return "zero"
    elif x < 3:
        return "small"
    return "big"


@case(6)
def complex_control(x):
    total = 0
    i = 0
    while i < x:
        j = 0
        while j < i:
            if (i * j) % 4 == 0:
                j += 1
                continue
            total += i * j
            if total > 30:
                break
            j += 1
        else:
            total += 1
        i += 1
    return total


@case([1, 2, 3])
def iterator_protocol(xs):
    it = iter(xs)
    a = next(it)
    b = next(it, None)
    rest = list(it)
    return a, b, rest, next(it, "exhausted")


@case(3)
def sorted_stability(x):
    data = [("b", 2), ("a", 2), ("c", 1)]
    return sorted(data, key=operator.itemgetter(1)), sorted(data)


@case(2)
def conditional_import_name(x):
    name = "sqrt" if x > 1 else "floor"
    return getattr(math, name)(16)


@case(5)
def slice_objects(x):
    s = slice(1, x, 2)
    return list(range(10))[s], s.indices(4), "abcdefg"[x:], "abcdefg"[:-x]


@case(3)
def string_building(x):
    parts = []
    for i in range(x):
        parts.append(f"<{i}>")
    s = ""
    for p in parts:
        s += p
    return s, "".join(parts) == s


@case(2)
def nested_functions_three_levels(x):
    def a(p):
        def b(q):
            def c(r):
                return p + q + r + x
            return c
        return b
    return a(1)(2)(3)


@case(3)
def recursion_closure(x):
    def walk(t, depth=0):
        if isinstance(t, list):
            return max((walk(c, depth + 1) for c in t), default=depth)
        return depth
    return walk([1, [2, [3, [x]]]])


@case({"b": 1, "a": 2})
def dict_comprehension_sorted(d):
    return {k: v * 2 for k, v in sorted(d.items())}, dict(sorted(d.items(), key=lambda kv: kv[1]))


@case(4)
def augmented_subscript(x):
    d = {"a": 1}
    lst = [1, 2]
    d["a"] += x
    lst[0] *= x
    lst[-1] -= 1
    return d, lst


@case(4)
def augmented_attribute(x):
    class O:
        n = 1
    o = O()
    o.n += x
    o.n *= 2
    return o.n


@case(3)
def global_constant_read(x):
    return SCALE * x, math.pi > 3


@case(3)
def counter_and_defaultdict(x):
    c = collections.Counter("abracadabra")
    dd = collections.defaultdict(list)
    for i in range(x):
        dd[i % 2].append(i)
    return c.most_common(2), dict(dd)


@case(2)
def staticmethod_call_via_instance(x):
    return Base(x).st(x), Base.cm(x), Base(x).cm(0)


@case(3)
def property_in_loop(x):
    objs = [Base(i) for i in range(x)]
    return [o.double for o in objs]


@case(3)
def many_locals(x):
    a = x
    b = a + 1
    c = b + 1
    d = c + 1
    e = d + 1
    f = e + 1
    g = f + 1
    h = g + 1
    i = h + 1
    j = i + 1
    k = j + 1
    m = k + 1
    n = m + 1
    o = n + 1
    p = o + 1
    q = p + 1
    r = q + 1
    s = r + 1
    t = s + 1
    return a + b + c + d + e + f + g + h + i + j + k + m + n + o + p + q + r + s + t


@case(3)
def long_jump(x):
    total = 0
    for i in range(x):
        total += i
        total += i * 2
        total += i * 3
        total += i * 4
        total += i * 5
        total += i * 6
        total += i * 7
        total += i * 8
        total += i * 9
        total += i * 10
        total += i * 11
        total += i * 12
        total += i * 13
        total += i * 14
        total += i * 15
        total += i * 16
        total += i * 17
        total += i * 18
        total += i * 19
        total += i * 20
        total += i * 21
        total += i * 22
        total += i * 23
        total += i * 24
        total += i * 25
        total += i * 26
        total += i * 27
        total += i * 28
        total += i * 29
        total += i * 30
    return total


@case(300)
def many_constants(x):
    vals = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
            24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45,
            46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67,
            68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q",
            "r", "s", "t", "u", "v", "w", "x", "y", "z", 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5,
            9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5,
            23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5, 30.5, 31.5, 32.5, 33.5, 34.5, 35.5, 36.5,
            b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"i", b"j", b"k", b"l", b"m",
            b"n", b"o", b"p", b"q", b"r", b"s", b"t", b"u", b"v", b"w", b"x", b"y", b"z",
            (1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (13, 14), (15, 16), (17, 18),
            -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18,
            1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013,
            2000, 2001, 2002, 2003, 2004, 2005, 2006, 2007, 2008, 2009, 2010, 2011, 2012, 2013,
            3000, 3001, 3002, 3003, 3004, 3005, 3006, 3007, 3008, 3009, 3010, 3011, 3012, 3013,
            0.25, 0.125, 0.0625, x]
    return len(vals), vals[-1], vals[x % len(vals)]


@case(1)
def zero_division(x):
    return x / 0


@case("a")
def type_error_add(x):
    return x + 1


@case({})
def key_error(d):
    return d["missing"]


@case(1)
def attribute_error(x):
    return x.nope


@case(1)
def name_error(x):
    return undefined_name_xyz  # noqa: F821


@case(1)
def call_wrong_arity(x):
    return _kwonly(x)


@case(2)
def is_and_identity(x):
    a = [x]
    b = a
    c = [x]
    return a is b, a is c, a == c, None is None


@case(5)
def unary_ops(x):
    return -x, +x, ~x, not x, -(-x), -1.5


@case([1, 2, 3])
def sum_with_start(xs):
    return sum(xs, 10), sum([[1], [2]], []), math.prod(xs)


@case(3)
def while_with_else_break(x):
    i = 0
    while i < 10:
        if i == x:
            break
        i += 1
    else:
        return "no"
    return i


@case(2)
def try_finally_no_exc(x):
    log = []
    try:
        log.append(x)
    finally:
        log.append("f")
    return log


@case(1)
def finally_reraises(x):
    log = []
    try:
        try:
            raise ValueError
        finally:
            log.append("f")
    except ValueError:
        log.append("c")
    return log


@case(3)
def generator_expression_in_call(x):
    return max(i * (x - i) for i in range(x + 1)), tuple(str(i) for i in range(x))


@case(2)
def dict_get_setdefault_loop(x):
    groups = {}
    for w in ["apple", "avocado", "banana", "blueberry", "cherry"]:
        groups.setdefault(w[0], []).append(w)
    return groups, len(groups) * x


@case(3)
def conditional_expression_chain(x):
    return "a" if x == 1 else "b" if x == 2 else "c" if x == 3 else "d"


@case(2)
def boolean_short_circuit(x):
    calls = []

    def t(v):
        calls.append(v)
        return v
    r = t(0) and t(1) or t(x) and t(3)
    return r, calls


@case(2)
def isinstance_tuple(x):
    return isinstance(x, (int, float)), isinstance(x, str), type(x) is int


@case(3)
def list_in_place_ops(x):
    a = [1]
    b = a
    a += [x]
    a *= 2
    return a, b is a


@case(2)
def tuple_in_place(x):
    a = (1,)
    b = a
    a += (x,)
    return a, b is a


@case(5)
def enumerate_start(x):
    return [(i, c) for i, c in enumerate("abc", start=x)]


@case([4, 5])
def zip_strict_free(xs):
    return list(zip(xs, "ab", [True, False]))


@case(3)
def closure_modified_after_creation(x):
    v = 1

    def get():
        return v
    v = x
    return get()


@case(2)
def lambda_in_default_arg(x):
    def f(g=lambda a: a * 2):
        return g(x)
    return f(), f(lambda a: a + 1)


@case(2)
def reduce_with_lambda(x):
    return functools.reduce(lambda a, b: a * b + x, [1, 2, 3])


@case(3)
def exception_in_comprehension(x):
    try:
        return [1 // (i - 1) for i in range(x)]
    except ZeroDivisionError:
        return "zde"


@case(2)
def exception_from_nested_call(x):
    def inner():
        raise LookupError("deep")

    def mid():
        return inner()
    try:
        mid()
    except LookupError as e:
        return str(e) * x


@case(3)
def return_tuple_of_lambdas(x):
    add, mul = (lambda a: a + x), (lambda a: a * x)
    return add(mul(2))


@case(4)
def nonlocal_in_comprehension_lambda(x):
    acc = []
    fs = [lambda i=i: acc.append(i * x) for i in range(3)]
    for f in fs:
        f()
    return acc


@case(2)
def with_inside_loop_exception(x):
    log = []
    for i in range(3):
        try:
            with _CM(log, swallow=(i == 1)):
                if i:
                    raise KeyError(i)
        except KeyError as e:
            log.append(("caught", e.args))
    return log


@case(2)
def try_except_star_free_reraise_in_finally(x):
    log = []
    try:
        try:
            raise KeyError("a")
        except KeyError:
            log.append("h")
            raise
        finally:
            log.append("f")
    except KeyError as e:
        log.append(str(e))
    return log


@case(2)
def object_identity_in_dict(x):
    k1, k2 = object(), object()
    d = {k1: 1, k2: x}
    return d[k2], len(d)


@case(3)
def iter_over_string_and_bytes(x):
    return [c for c in "xyz"[:x]], [b for b in b"ab"]


@case(3)
def min_max_kwargs(x):
    return min([], default=x), max([1, x], key=lambda v: -v), min(3, 1, 2)


@case(1)
def unicode_and_escape(x):
    return "é" * x, "\t\n", len("日本"), "%r" % "é"


@case(3)
def int_float_edge(x):
    return 7 // -2, -7 % 3, 2 ** -1, int(-2.5), round(2.5), round(3.5), 1e16 + 1 == 1e16


@case(2)
def sorted_custom_cmp(x):
    return sorted(["bb", "a", "ccc"], key=len, reverse=x > 1)


@case(2)
def nested_data_update(x):
    cfg = {"a": {"b": [1, 2]}}
    cfg["a"]["b"][0] = x
    cfg["a"].setdefault("c", {})["d"] = x * 2
    return cfg


@case(3)
def star_assign_middle(x):
    a, *b, c = range(x + 3)
    [d, e] = "de"
    return a, b, c, d, e
