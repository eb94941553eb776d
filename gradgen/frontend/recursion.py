"""Recursion (a mixin of gradgen.frontend.lower.Lowerer): a call to a function already being
inlined is unrolled when what is known of its arguments when compiling differs from every
call of it being inlined, so that its base case folds at a depth they fix; any other
recursion is refused at the recursive call. What is known: numbers, lists kept while
compiling, and the kind of a parameter or of its items (a list, a tuple, a dict, an array)
that an annotation states (`data: list[np.ndarray]`) or a call of the Python API showed;
`isinstance(data, list)` of such a value is known too, and the generated function checks on
entry that its arguments are of the kinds it was compiled for.
"""

from __future__ import annotations

import ast

from gradgen.frontend.known_lists import ConstList, StaticList
from gradgen.frontend.scopes import MAX_INLINE_DEPTH, MAX_INLINED_NODES, _lookup
from gradgen.frontend.structured import SliceStep, TreeRef
from gradgen.ir.nodes import Const, Effect, Var

# how annotations spell the kinds isinstance can be asked about
_HEADS = {"list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple", "dict": "dict", "Dict": "dict",
          "ndarray": "ndarray", "NDArray": "ndarray"}
# the types an isinstance test names, by kind
_TYPES = {"list": "list", "tuple": "tuple", "dict": "dict", "numpy.ndarray": "ndarray"}
_SPELLED = {"list": "list", "tuple": "tuple", "dict": "dict", "ndarray": "np.ndarray"}


class RecursionLowering:
    """Recursion unrolled to a depth known when compiling; kinds of parameters and their items."""

    def _inline_limits(self, node, hnode, args=None):
        """Refuse recursion on a depth known only when the code runs (`args`: the call's, by
        parameter; None for a custom rule's, never unrolled), and inlining past its bounds
        (depth, syntax nodes copied)."""
        if hnode.name in self.stack:
            self._recursion(node, hnode, args or {})
        if len(self.stack) > MAX_INLINE_DEPTH:
            recursive = [(name, at) for k, (name, _, at) in enumerate(self.activations)
                         if name in [a[0] for a in self.activations[:k]] or name == self.fnode.name]
            if recursive:  # (said where the recursion recurses, not at whichever call reached the bound)
                name, at = recursive[-1]
                raise self.m.error(at, f"recursive call to '{name}' more than {MAX_INLINE_DEPTH} calls deep when "
                                       "unrolled: gradgen unrolls recursion whose depth constants fix when "
                                       "compiling, and stops there; write it as a loop")
            raise self.m.error(node, f"helpers call helpers more than {MAX_INLINE_DEPTH} deep here; "
                                     "gradgen inlines each call and stops there")
        self.inlined = getattr(self, "inlined", 0) + sum(1 for _ in ast.walk(hnode))
        if self.inlined > MAX_INLINED_NODES:  # helpers calling a helper twice double at every level
            raise self.m.error(node, f"inlining the helpers '{self.fnode.name}' calls copies more than "
                                     f"{MAX_INLINED_NODES:,} syntax nodes; gradgen stops here")

    def _recursion(self, node, hnode, args):
        """A call to a function already being inlined is unrolled like any helper's when values
        known when compiling (a count, a list) differ from those of every call of it being
        inlined: its base case then folds (`if n == 0: return x`) at a depth they fix.
        Otherwise the depth is known only when the code runs."""
        known = self._known_arguments(args)
        if not known or any(name == hnode.name and earlier == known for name, earlier, _ in self.activations):
            raise self.m.error(node, f"recursive call to '{hnode.name}' on a depth known only when it runs: "
                                     "write it as a loop")

    def _known_arguments(self, args):
        """The arguments of a call known when compiling, by parameter: numbers, lists of them,
        a list of values kept while compiling (by its length), the kind of a parameter's part."""
        known = []
        for name, value in args.items():
            if isinstance(value, Const) and type(value.value) in (int, float, bool, str):
                known.append((name, value.value))
            elif isinstance(value, ConstList):
                known.append((name, repr(value.value)))
            elif isinstance(value, StaticList):
                known.append((name, ("a list of", len(value.items))))
            elif self._kind_of(value) is not None:
                known.append((name, ("a part of kind", self._kind_of(value)[2])))
        return tuple(known)

    def _kind_of(self, value):
        """(parameter, depth, kind) of a value that is a parameter (depth 0) or an item of one
        (depth 1) whose kind is stated, else None."""
        if isinstance(value, TreeRef):
            root, steps = value.root.name, [s for s in value.path if not isinstance(s, SliceStep)]
            depth = len(steps)
        elif isinstance(value, Var) and value.name in self.top_params and value.name not in self.parts \
                and self.origins.get(value.name) == value.name:
            root, depth = value.name, 0
        else:
            return None
        if root not in self.top_params or depth > 1:
            return None
        stated = getattr(self.m, "assumed_kinds", {}).get(root) or kind_chain(self.param_annotations.get(root))
        return (root, depth, stated[depth]) if depth < len(stated) else None

    def _known_isinstance(self, scope, node):
        """The truth of `isinstance(x, T)` where x's kind is stated (see _kind_of), else None.
        The generated function checks the kind on entry (self.kind_checks)."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                and self._is_builtin(scope, "isinstance") and len(node.args) == 2 and not node.keywords
                and isinstance(node.args[0], ast.Name)):
            return None
        kind = self._kind_of(_lookup(scope, node.args[0].id))
        if kind is None:
            return None
        types = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        named = [self._type_named(scope, t) for t in types]
        if kind[2] in named:
            truth = True
        elif None in named:
            return None
        else:
            truth = False
        self.kind_checks[kind[:2]] = kind[2]
        return truth

    def _type_named(self, scope, node):
        if isinstance(node, ast.Name) and node.id in _TYPES and self._is_builtin(scope, node.id):
            return _TYPES[node.id]
        qualified = self.m.qualified(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        return _TYPES.get(qualified) if qualified == "numpy.ndarray" else None

    def _kind_guards(self):
        """The checks on entry for the kinds compiling relied on (a ValueError, never a wrong path)."""
        out = []
        for (param, depth), kind in sorted(self.kind_checks.items()):
            spelled = _SPELLED[kind]
            test = (f"isinstance({param}, {spelled})" if depth == 0
                    else f"all(isinstance(item, {spelled}) for item in {param})")
            said = f"'{param}' a {kind}" if depth == 0 else f"the items of '{param}' of kind {spelled}"
            message = (f"{self.fnode.name}'s gradient was compiled for {said} (isinstance decides its path); "
                       "compile it again for the other kind")
            modules = {"numpy"} if kind == "ndarray" else set()
            out.append(Effect(f"if not {test}:\n    raise ValueError({message!r})", (), None, None,
                              frozenset(modules)))
        return out


def kind_chain(annotation):
    """The kinds an annotation states, outermost first: `list[np.ndarray]` -> (list, ndarray),
    `dict[str, list[float]]` -> (dict, list); () where it states none."""
    out, node = [], annotation
    while node is not None:
        base, args = node, []
        if isinstance(node, ast.Subscript):
            base = node.value
            args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        head = _head(base)
        if head is None and args and _head(args[0]) == "ndarray":  # Float[np.ndarray, "n d"]
            head, args = "ndarray", []
        if head is None:
            break
        out.append(head)
        items = [a for a in args if not (isinstance(a, ast.Constant) and a.value is Ellipsis)]
        if head == "dict":
            node = items[1] if len(items) == 2 else None
        elif head in ("list", "tuple") and items and all(ast.dump(a) == ast.dump(items[0]) for a in items):
            node = items[0]
        else:
            node = None
    return tuple(out)


def _head(node):
    if isinstance(node, ast.Name):
        return _HEADS.get(node.id)
    if isinstance(node, ast.Attribute):
        return _HEADS.get(node.attr)
    return None
