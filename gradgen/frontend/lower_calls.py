"""Lowering of calls (a mixin of gradgen.frontend.lower.Lowerer): library primitives with their
static keywords, methods, same-file helpers inlined hygienically (their arguments,
defaults, `*args`, a tuple they return), and what to say of a call gradgen has no
rule for."""

from __future__ import annotations

import ast
import builtins
import contextlib
import operator

from gradgen.frontend import custom_calls, effects, flattening, inactive, local_imports, nested, odeint
from gradgen.frontend.closures import FUNCTION_VALUES, FunctionValue, LibraryFunction, lambda_as_def, own_nodes
from gradgen.frontend.generators import is_generator
from gradgen.frontend.known_lists import STATIC_VALUES, ConstList
from gradgen.frontend.constants import constant_value
from gradgen.frontend.scopes import (
    ArgsTuple, Scope, _assigned_names, _lookup, _skip_docstring, _static_int,
    parameter_names
)
from gradgen.frontend.structured import TreeRef
from gradgen.ir.nodes import Call, Const, Spelled, Var
from gradgen.rules import table

_LIBRARIES = {"math", "numpy", "scipy", "builtins"}

_DRAW = ("'{call}' draws from Python's random module, whose state the generated code cannot share: draw with "
         "NumPy (a np.random.RandomState or Generator parameter, or np.random.*), or pass the noise in as data "
         "(def f(..., *, eps))")

_BUILTIN_CALLS = {"abs", "min", "max", "pow", "float", "int", "round", "len"}

_COUNT = {1: "one", 2: "two", 3: "three"}


class CallLowering:
    """Calls: primitives, methods, helpers inlined."""

    # ---- calls -----------------------------------------------------------------------
    def _call_node(self, scope, node):
        node = self._desugared(scope, node)  # map, partial, list(...) (gradgen.frontend.mapping)
        if isinstance(node, ast.ListComp):
            return self._comprehension(scope, node)
        partial = self._partial_value(scope, node)
        if partial is not None:
            return partial
        func = node.func
        derivative = nested.function_value(self, scope, node, sigmoid_pattern)
        if derivative is not None:  # `force = gradgen.grad(potential)`: a function value, inlined where called
            return derivative
        integrated = odeint.lowered(self, scope, node)
        if integrated is not None:  # odeint(f, y0, t, args): f written into the generated module
            return integrated
        if effects.is_draw(self.m, node, lambda n: _lookup(scope, n)):
            return self._draw(scope, node)
        if isinstance(func, ast.Name) and func.id in self.m.classes:
            raise self.m.error(node, f"'{func.id}' is a class: gradgen differentiates plain functions only")
        if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1 and not node.keywords \
                and _lookup(scope, "len") is None and "len" not in self.m.functions:
            items = self._args_tuple(scope, node.args[0])
            if items is not None:  # len(args): known where the helper is called
                return Const(len(items.items))
            ref = self._ref(scope, node.args[0])
            if ref is not None:  # len(params), len(params[i]): measured at run time
                self._by_position(ref, node, "measures")  # (not a dataclass: gradgen.frontend.records)
                length = ref.length()
                return self._call(length.prim, length.args, length.ns, node)
        callee = self._helper_node(scope, node)
        if isinstance(callee, FunctionValue):
            return self._inline(scope, node, callee.node, closure=callee.closure)
        if isinstance(func, ast.Name) and func.id == "sum" and _lookup(scope, "sum") is None \
                and "sum" not in self.m.functions and 1 <= len(node.args) <= 2 and not node.keywords \
                and (isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp))
                     or self._list_arg(scope, node.args[0]) is not None
                     or not isinstance(node.args[0], ast.List) and self._makes_list(scope, node.args[0])):
            return self._total(scope, node)
        extreme = self._extreme_of_list(scope, node)
        if extreme is not None:
            return extreme
        flattening.refuse_call(self, node, callee)  # flatten(params) as one value, unflatten(v)
        if isinstance(callee, LibraryFunction):  # act(x) with act = np.tanh
            return self._primitive_call(scope, node, callee.spelled, *table.lookup(callee.qualified))
        if isinstance(func, ast.Name) and func.id in self.m.not_constants:
            raise self.m.error(node, f"'{func.id}' {self.m.not_constants[func.id][1]}")
        qualified = self.m.qualified(func)
        if qualified is None and isinstance(func, ast.Name) and func.id in _BUILTIN_CALLS:
            qualified = func.id
        if qualified is None and isinstance(func, ast.Attribute):
            return self._method_call(scope, node)
        spelled = ast.unparse(func)
        if qualified is None:
            if isinstance(func, ast.Name):
                raise inactive.no_rule(self.m.error(node, f"unknown function '{spelled}': gradgen differentiates "
                                                          "its known primitives and functions defined in this file"))
            raise inactive.no_rule(self.m.error(node, f"unknown function '{spelled}'"))
        found = table.lookup(qualified)
        if found is None:
            raise inactive.no_rule(self.m.error(node, self._no_rule(qualified, spelled, node)))
        return self._primitive_call(scope, node, spelled, *found)

    def _extreme_of_list(self, scope, node):
        """`max(xs)`, `min(x ** 2 for x in a)`, `max([...])`: Python's max of a list of numbers,
        which is np.max of the array of them (the value is the same; at a tie, the gradient
        is shared, a subgradient as good as the first element's). None for any other call."""
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in ("max", "min") and _lookup(scope, func.id) is None
                and func.id not in self.m.functions and len(node.args) == 1 and not node.keywords):
            return None
        arg = node.args[0]
        if isinstance(arg, ast.GeneratorExp):
            arg = ast.copy_location(ast.ListComp(arg.elt, arg.generators), arg)
        items = self._list_value(scope, arg)
        if items is None:
            return None
        array = self._call("array_list", (items,), "numpy", arg)
        return self._call("amax" if func.id == "max" else "amin", (array,), "numpy", node)

    def _no_rule(self, qualified, spelled, node):
        """What to say of a call gradgen has no rule for: a random draw, a function of the
        user's other files, or a library function."""
        library = qualified.split(".")[0]
        if library == "random":
            return _DRAW.format(call=ast.unparse(node))
        found = local_imports.target(self.m, qualified)
        if found is not None:  # a file beside this one, without that function
            other, name = found
            what = "a class" if name in other.classes else "rebound after its 'def'" if name in other.redefined \
                else "not a function it defines"
            return f"'{spelled}' names '{name}' of {other.filename}, which is {what} there"
        if library not in _LIBRARIES:
            return (f"'{spelled}' comes from '{qualified.rpartition('.')[0]}', which gradgen does not read: "
                    "it differentiates functions of this file, of the files beside it that it imports, and "
                    "known library functions; copy the function into this file")
        return f"gradgen has no derivative rule for '{spelled}'"

    def _helper_node(self, scope, node):
        """The function value `node` calls, if it calls one by name: a same-file function or
        one of the user's other files, a nested def or lambda, a function passed in
        (`nonlinearity(x)`), an item of a list of functions (`acts[1](x)`)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Lambda):  # (lambda v: v * v)(x)
            return FunctionValue(lambda_as_def(node.func, "lambda"), scope)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Call):  # gradgen.grad(potential)(x)
            return nested.function_value(self, scope, node.func, sigmoid_pattern)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):  # acts[1](x): a list of functions
            value = self._static_expr(scope, node.func)
            return value if isinstance(value, FUNCTION_VALUES) else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            value = _lookup(scope, node.func.id)
            if isinstance(value, FUNCTION_VALUES):
                return value
            if value is None and node.func.id in self.m.functions:
                return FunctionValue(self.m.functions[node.func.id])
            if value is not None or node.func.id in self.m.functions:
                return None
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            imported = local_imports.function(self.m, self.m.qualified(node.func))
            if imported is not None:  # `predict(x)`, `m.predict(x)`: a function of the user's other file
                return FunctionValue(imported)
        return None

    @contextlib.contextmanager
    def _in_module(self, module):
        """Names resolve in `module` meanwhile (the file an imported helper is defined in: its
        constants, its imports; its errors located there)."""
        caller, self.m = self.m, module
        try:
            yield
        finally:
            self.m = caller

    def _method_call(self, scope, node):
        """`x.sum(axis=0)`, `x.reshape(n, -1)`, `x.dot(w)`: the NumPy function, `x` first."""
        func = node.func
        self._refuse_method_call(scope, node)  # p.predict(x) of a NamedTuple or dataclass (gradgen.frontend.records)
        name = {"dot": "matmul", "max": "amax", "min": "amin", "flatten": "ravel"}.get(func.attr, func.attr)
        prim = table.TABLE.get(name)
        if prim is None or not (prim.method or name in ("matmul", "amax", "amin")):
            raise inactive.no_rule(self.m.error(node, f"gradgen has no derivative rule for the method '.{func.attr}()'"))
        shape_args = node.args
        if name == "reshape" and not (len(node.args) == 1 and isinstance(node.args[0], ast.Tuple)):
            shape_args = [ast.copy_location(ast.Tuple(elts=list(node.args), ctx=ast.Load()), node)]
        if isinstance(func.value, ast.ListComp) or self._list_arg(scope, func.value) is not None:
            text = self.m.segment(func.value)
            raise self.m.error(node, f"'{text}' is a list, which has no method '.{func.attr}()': call it on "
                                     f"np.array({text})")
        call = ast.copy_location(ast.Call(func=func, args=[func.value] + list(shape_args), keywords=node.keywords), node)
        return self._primitive_call(scope, call, f".{func.attr}()", name, "numpy")

    def _arguments(self, scope, node, prim_name, ns="numpy"):
        """Positional arguments: a list literal spreads (np.concatenate([a, b])); a tuple is a shape."""
        args = list(node.args)
        items = self._list_value(scope, args[0]) if args else None
        if items is not None:  # a list: len(hs), np.stack(hs), np.array(hs), np.sum(hs), np.exp([...])
            if prim_name == "len":
                return prim_name, [items]
            if prim_name in ("stack", "array", "concatenate", "vstack", "hstack"):
                return f"{prim_name}_list", [items]
            return prim_name, [self._list_as_array(items, args[0], ns)] + [self._library_argument(scope, a, ns)
                                                                          for a in args[1:]]
        sequence = (ast.List, ast.Tuple)
        spread = self._args_tuple(scope, args[0]) if args and not isinstance(args[0], sequence) else None
        if spread is not None and prim_name in ("concatenate", "stack", "hstack", "vstack", "column_stack", "array",
                                                "sum"):  # np.hstack(args + (ones,)): the items, as a list
            args = [ast.copy_location(ast.List([], ast.Load()), args[0])] + list(args[1:])
            elements = list(spread.items)
        elif prim_name in ("concatenate", "stack", "sum", "array", "hstack", "vstack", "column_stack") and args \
                and isinstance(args[0], sequence):
            elements = [self.expr(scope, e) for e in args[0].elts]
        elif prim_name in ("stack", "sum", "array") and args and self._constant_numbers(scope, args[0]) is not None:
            elements = [Const(v) for v in self._constant_numbers(scope, args[0])]  # np.array(sizes): its numbers
        else:
            elements = None
        if elements is not None:
            if prim_name == "sum" and len(args) == 1:
                if node.keywords:  # np.sum([a, b], axis=0): a sum over the stacked list
                    return "sum", [self._call("stack", tuple(elements), "numpy", node)]
                return "sum_list", elements
            if prim_name == "array":
                return "stack", elements
            return prim_name, elements + [self.expr(scope, a) for a in args[1:]]
        prim = table.TABLE[prim_name]
        if prim.keywords and prim.arity:  # `x.astype(float)`: arguments past the arity are static (dtype=)
            args = args[:prim.arity]
        values = []
        for arg in args:
            if isinstance(arg, ast.Starred):
                raise self.m.error(arg, "starred arguments are not supported")
            if isinstance(arg, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in arg.elts):
                values.append(self._call("tuple", tuple(self.expr(scope, e) for e in arg.elts), "builtins", arg))
            else:
                values.append(self._library_argument(scope, arg, ns))
        return prim_name, values

    def _library_argument(self, scope, arg, ns):
        """One argument's value; a list (a comprehension, a list variable, a helper's list)
        passed to a NumPy function is the array NumPy makes of it."""
        value = self.expr(scope, arg)
        return self._list_as_array(value, arg, ns) if self._is_list(value) else value

    def _list_as_array(self, items, node, ns):
        """A list given to a library function: NumPy and SciPy read it as np.array(items), so
        the gradient flows back through the array, row by row into the list; anything else
        (math, Python's builtins) has no meaning for a list."""
        if ns == "numpy" or ns.startswith("scipy"):
            return self._call("array_list", (items,), "numpy", node)
        text = self.m.segment(node)
        raise self.m.error(node, f"'{text}' is a list: pass np.array({text}) (an array) instead")

    def _static_parameters(self, node, prim, spelled, extra, scope=None):
        """Keyword arguments such as axis= and keepdims=: constants, passed to the rule."""
        params = dict(zip(prim.keywords, extra))
        for kw in node.keywords:
            if kw.arg not in prim.keywords:
                raise self.m.error(kw, f"keyword argument '{kw.arg}' to '{spelled}' is not supported")
            params[kw.arg] = self._static(kw.value, kw.arg, scope)
        return tuple(params.items())

    def _static(self, value, name, scope=None):
        """The constant `value` denotes: written out, a module constant, or (in `scope`) a
        helper's parameter bound to one where it is called (`def logsumexp(x, axis=None)`,
        `np.max(x, axis=axis)` inlined from `logsumexp(z, 1)`)."""
        if scope is not None and isinstance(value, ast.Name):
            bound = _lookup(scope, value.id)
            if isinstance(bound, Const) and (bound.value is None or type(bound.value) in (int, float, bool)):
                return bound.value
            if isinstance(bound, ConstList) and isinstance(bound.value, tuple):
                return bound.value
        if isinstance(value, ast.Constant) and value.value is None:
            return None
        if name == "subscripts" and isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value  # np.einsum's, checked by _einsum_subscripts
        if name == "mode" and isinstance(value, ast.Constant) and value.value in ("full", "same", "valid"):
            return value.value  # np.convolve's
        if name == "dtype" and ast.unparse(value) in ("float", "np.float64", "numpy.float64", "'float64'"):
            return Spelled("float")
        if name == "dtype" and ast.unparse(value) in ("int", "np.int64", "np.int32", "numpy.int64", "'int'"):
            return Spelled("int")  # `np.floor(x).astype(int)`: indices computed from data, no derivative
        try:
            return constant_value(value, self.m)
        except ValueError:
            raise self.m.error(value, f"'{name}=' must be a constant here") from None

    def _primitive_call(self, scope, node, spelled, prim_name, ns):
        if prim_name == "einsum":
            node = self._einsum_subscripts(node, spelled)
        node = self._keywords_by_position(node, table.TABLE[prim_name], spelled)
        prim_name, args = self._arguments(scope, node, prim_name, ns)
        if prim_name == "log" and len(args) == 2:
            prim_name = "logb"
        prim = table.TABLE[prim_name]
        params = ()
        if prim.keywords:
            arity = prim.arity if prim.arity is not None else len(args)
            extra = [self._static(a, k, scope) for a, k in zip(node.args[arity:], prim.keywords)] if prim.arity else []
            args = args[:arity]
            params = self._static_parameters(node, prim, spelled, extra, scope)
        elif node.keywords:
            raise self.m.error(node.keywords[0], f"keyword arguments to '{spelled}' are not supported")
        args = tuple(args)
        if prim.arity is None and len(args) < prim.min_args:
            raise self.m.error(node, f"'{spelled}' needs {_COUNT.get(prim.min_args, prim.min_args)} or more arguments")
        if prim.arity is not None and len(args) != prim.arity:
            plural = "" if prim.arity == 1 else "s"
            raise self.m.error(node, f"'{spelled}' takes {prim.arity} argument{plural}, got {len(args)}")
        if prim_name == "sigmoid":
            self.helpers["sigmoid"] = self.sigmoid_name
        return self._call(prim_name, args, ns, node, params)

    def _einsum_subscripts(self, node, spelled):
        """`np.einsum('wc,wco->o', x, W)`: the subscripts, checked and with the output
        written out, as a static keyword; the operands as the arguments."""
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or node.keywords:
            raise self.m.error(node, f"'{spelled}' takes its subscripts as a string first, then the operands "
                                     "(np.einsum('ij,jk->ik', A, B)), no keywords")
        text = first.value.replace(" ", "")
        inputs, arrow, output = text.partition("->")
        parts = inputs.split(",")
        letters = "".join(parts)
        if not arrow:  # implicit: the letters that appear once, in alphabetical order
            output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        if "." in text or not all(p.isalpha() for p in parts) or not (output.isalpha() or output == "") \
                or any(len(set(p)) != len(p) for p in parts + [output]) or len(parts) != len(node.args) - 1 \
                or any(c not in letters for c in output):
            raise self.m.error(first, f"'{spelled}' is supported with letters only, one per axis of each operand "
                                      "(no index repeated within one, no '...'), one operand per subscript; write a "
                                      "diagonal as np.diagonal(...) first")
        spec = ast.copy_location(ast.Constant(f"{inputs}->{output}"), first)
        return ast.copy_location(ast.Call(node.func, list(node.args[1:]), [ast.keyword("subscripts", spec)]), node)

    def _keywords_by_position(self, node, prim, spelled):
        """`norm.logpdf(w, loc=0.0, scale=s)` as `norm.logpdf(w, 0.0, s)`: a keyword the
        function also takes by position is passed by position (a value, differentiated like
        any argument; a skipped one gets its default), so `scale=np.exp(log_std)` works."""
        names = [name for name, _ in prim.positional]
        moved = {kw.arg: kw.value for kw in node.keywords if kw.arg in names}
        if not moved:
            return node
        args = list(node.args)
        for name in moved:
            if names.index(name) < len(args):
                raise self.m.error(node, f"'{spelled}' got two values for its argument '{name}'")
        for name, default in prim.positional[len(args):max(names.index(n) for n in moved) + 1]:
            if name in moved:
                args.append(moved[name])
            elif default is table.REQUIRED:
                raise self.m.error(node, f"'{spelled}' needs its argument '{name}'")
            else:
                args.append(ast.copy_location(ast.Constant(default), node))
        keywords = [kw for kw in node.keywords if kw.arg not in moved]
        return ast.copy_location(ast.Call(func=node.func, args=args, keywords=keywords), node)

    def _inline(self, scope, node, hnode, unpacked=None, closure=None, consumer=None):
        """A call to a same-file function: the sigmoid primitive, or the helper's body inlined
        (`unpacked`: its call is unpacked into that many names; the result is then a tuple;
        `consumer`: the loop over a generator's call, run at its yields)."""
        if consumer is None and is_generator(hnode):
            self._refuse_generator(node, hnode)
        home = local_imports.home(self.m, hnode, closure)
        custom = custom_calls.custom_of(home, hnode)
        if custom is not None:  # @gradgen.custom_vjp: its body's value, differentiated by its rule
            return custom_calls.lower_call(self, scope, node, custom, unpacked)
        with self._in_module(home):
            self._params(hnode, helper=True)  # decorators, ...: said of the helper before its call is matched
        args = {name: _folded(value) for name, value in self._bind_arguments(scope, node, hnode, home).items()}
        self._inline_limits(node, hnode, args)
        with self._in_module(home):
            sigmoid_ns = sigmoid_pattern(hnode, self.m)
            if sigmoid_ns is not None and unpacked is None:
                self.helpers["sigmoid"] = self.sigmoid_name
                return self._call("sigmoid", (args[hnode.args.args[0].arg],), sigmoid_ns, node)
            return self._inline_bound(node, hnode, args, unpacked, closure, consumer)

    def _inline_bound(self, node, hnode, args, unpacked=None, closure=None, consumer=None):
        """The helper's body inlined, its parameters bound to `args` (name -> value) in a
        scope of its own: its locals never clash with the caller's names."""
        env = {}
        for name, value in args.items():
            if isinstance(value, ArgsTuple):  # *args: each value in a variable of its own
                env[name] = ArgsTuple(tuple(self._named(name, v, node) for v in value.items))
                continue
            if not isinstance(value, (Var, Const, TreeRef, *FUNCTION_VALUES, *STATIC_VALUES)):
                ssa = self.namer.define(name)
                self._emit(ssa, value, node, overwrites=self.loop_depth > 0)
                value = Var(ssa)
            env[name] = value
        self.stack.append(hnode.name)
        self.activations.append((hnode.name, self._known_arguments(args), node))
        inner = Scope(hnode, env, _assigned_names(hnode), hnode.name, unpacked=unpacked, owned=set(), closure=closure,
                      depth=self.depth)
        if consumer is not None:
            result, _ = self._generator_body(inner, hnode, consumer)
        else:
            result, _ = self._body(inner, hnode.body)
        self.stack.pop()
        self.activations.pop()
        return result

    def _bind_arguments(self, scope, node, hnode, home=None):
        """Match a call's arguments to the helper's parameters, as Python would (its defaults
        read in `home`, the file it is defined in)."""
        positional = [a.arg for a in hnode.args.args]
        names = parameter_names(hnode)
        bound = {}
        given = self._spread(scope, node.args)
        if len(given) > len(positional) and hnode.args.vararg is None:
            raise self.m.error(node, f"'{hnode.name}' takes {len(positional)} arguments, got {len(given)}")
        for name, value in zip(positional, given):
            bound[name] = value
        if hnode.args.vararg is not None:  # `def f(w, *args)`: the rest, as a tuple of values
            bound[hnode.args.vararg.arg] = ArgsTuple(tuple(given[len(positional):]))
        for kw in node.keywords:
            if kw.arg is None or kw.arg not in names:
                raise self.m.error(kw, f"'{hnode.name}' has no parameter '{kw.arg}'")
            if kw.arg in bound:
                raise self.m.error(kw, f"'{hnode.name}' got two values for '{kw.arg}'")
            bound[kw.arg] = self._argument(scope, kw.value)
        defaults = dict(zip(positional[len(positional) - len(hnode.args.defaults):], hnode.args.defaults))
        defaults.update({a.arg: d for a, d in zip(hnode.args.kwonlyargs, hnode.args.kw_defaults) if d is not None})
        for name in names:
            if name not in bound:
                if name not in defaults:
                    raise self.m.error(node, f"'{hnode.name}' is missing its argument '{name}'")
                with self._in_module(home or self.m):
                    bound[name] = self._function_default(defaults[name]) or Const(self._default(defaults[name], name))
        return {name: bound[name] for name in names + ([hnode.args.vararg.arg] if hnode.args.vararg else [])}

    def _spread(self, scope, nodes):
        """A call's positional values, `*args` of a tuple spread into them."""
        out = []
        for arg in nodes:
            if isinstance(arg, ast.Starred):
                items = self._args_tuple(scope, arg.value)
                if items is None:
                    raise self.m.error(arg, "a starred argument must be a helper's *args (f(*args))")
                out += list(items.items)
            else:
                out.append(self._argument(scope, arg))
        return out

    def _named(self, name, value, node):
        """`value` in a variable of its own unless it is one (or a number, a part, a function)."""
        if isinstance(value, (Var, Const, TreeRef, *FUNCTION_VALUES)):
            return value
        ssa = self.namer.define(name)
        self._emit(ssa, value, node, overwrites=self.loop_depth > 0)
        return Var(ssa)

    def _tuple_of_values(self, scope, node, stmt):
        """`pair = helper(...)` of a helper that returns a tuple (`return a, b`), or `pair =
        (a, b)`: the values, each in a variable of its own; else None."""
        if isinstance(node, ast.Tuple) and node.elts and not any(isinstance(e, ast.Starred) for e in node.elts):
            return ArgsTuple(tuple(self._named("item", self.expr(scope, e), stmt) for e in node.elts))
        helper = self._helper_node(scope, node)
        if not isinstance(helper, FunctionValue):
            return None
        returns = [n.value for n in own_nodes(helper.node.body) if isinstance(n, ast.Return)]
        sizes = {len(r.elts) if isinstance(r, ast.Tuple) else None for r in returns}
        if len(sizes) != 1 or None in sizes:
            return None
        values = self._inline(scope, node, helper.node, unpacked=sizes.pop(), closure=helper.closure)
        return ArgsTuple(tuple(self._named(f"{helper.node.name}_{k}", v, stmt) for k, v in enumerate(values)))

    def _args_tuple(self, scope, node):
        """The ArgsTuple `node` makes: `args`, `args + (x,)`, `args[1:]`; else None."""
        if isinstance(node, ast.Name):
            value = _lookup(scope, node.id)
            return value if isinstance(value, ArgsTuple) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = (self._args_tuple(scope, n) if not isinstance(n, ast.Tuple) else ArgsTuple(
                tuple(self.expr(scope, e) for e in n.elts)) for n in (node.left, node.right))
            if left is not None and right is not None and not (isinstance(node.left, ast.Tuple)
                                                               and isinstance(node.right, ast.Tuple)):
                return ArgsTuple(left.items + right.items)
            return None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            whole = self._args_tuple(scope, node.value)
            if whole is not None:
                parts = [None if p is None else _static_int(p) for p in (node.slice.lower, node.slice.upper,
                                                                           node.slice.step)]
                return ArgsTuple(whole.items[slice(*parts)])
        return None

    def _argument(self, scope, node):
        """A helper's argument: a part of a structured parameter, a list and a tuple of values
        pass as they are."""
        items = self._args_tuple(scope, node)
        if items is not None:
            return items
        static = self._static_argument(scope, node)
        if static is not None:  # make_nn_funs(layer_sizes=[1, 4, 1]): a list of constants
            return static
        ref = self._ref(scope, node)
        if ref is not None:
            return ref
        items = self._list_arg(scope, node)
        if items is not None:
            return items
        return self.expr(scope, node, function_ok=True)


_ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
               "mod": operator.mod, "neg": operator.neg}


def _folded(value):
    """A helper's argument `n - 1` of integers known when compiling as the integer it is (a
    count, a depth: `f(g(x), n - 1)` inside f); any other value as it is."""
    if isinstance(value, Call) and value.prim in _ARITHMETIC and value.args:
        args = [_folded(a) for a in value.args]
        if all(isinstance(a, Const) and type(a.value) is int for a in args):
            try:
                return Const(_ARITHMETIC[value.prim](*(a.value for a in args)))
            except (ArithmeticError, TypeError):
                return value
    return value


def _draw_name(node):
    """The variable a draw goes into when it is part of a larger expression: `noise`."""
    return "noise"


def returns_a_tuple(module, fnode, seen=()):
    """Whether a helper returns a tuple (`return a, b`, or the call of a helper that does),
    so that `a, b = helper(...)` takes its values; one that returns an array (`return
    np.tanh(z)`) is unpacked along the array's first axis, as Python unpacks it."""
    for node in own_nodes(fnode.body):
        if not isinstance(node, ast.Return):
            continue
        value = node.value
        if isinstance(value, ast.Tuple):
            return True
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            continue
        name = value.func.id
        if name in module.functions:
            if name not in seen and returns_a_tuple(module, module.functions[name], (*seen, fnode.name)):
                return True
        elif name not in module.imports and not hasattr(builtins, name):
            return True  # a nested def or a function passed in: its call is read as a tuple, as before
    return False


def sigmoid_pattern(fnode, module):
    """The namespace of exp if `fnode` is `def f(x): return 1 / (1 + exp(-x))`, else None."""
    args = fnode.args
    if len(args.args) != 1 or args.vararg or args.kwarg or args.kwonlyargs or fnode.decorator_list:
        return None
    body = _skip_docstring(fnode.body)
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    x = args.args[0].arg
    e = body[0].value
    one = (lambda n: isinstance(n, ast.Constant) and type(n.value) in (int, float) and n.value == 1)
    if not (isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div) and one(e.left)):
        return None
    d = e.right
    if not (isinstance(d, ast.BinOp) and isinstance(d.op, ast.Add) and one(d.left)):
        return None
    c = d.right
    if not (isinstance(c, ast.Call) and len(c.args) == 1 and not c.keywords):
        return None
    found = table.lookup(module.qualified(c.func) or "")
    a = c.args[0]
    negated_x = (isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub)
                 and isinstance(a.operand, ast.Name) and a.operand.id == x)
    if found and found[0] == "exp" and negated_x:
        return found[1]
    return None
