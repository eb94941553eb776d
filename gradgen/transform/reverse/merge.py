"""Stage 4, reverse: the contributions one statement sends, before they are written.

`_Reverser.assign` pushes the statement's adjoint down its expression (gradgen.transform.reverse.expression) and
gets a list of (variable, contribution) pairs and named subexpression gradients. This
mixin shapes that list as a person writes it: the contributions to one array as one sum
(added and factored by gradgen.transform.reverse.factoring), scatters into one index as one, and a gradient
named for a subexpression that one variable receives unchanged as that variable's adjoint.
"""

from __future__ import annotations

from gradgen.analysis import sameshape
from gradgen.ir.nodes import Call, Cond, Var
from gradgen.transform.reverse import factoring
from gradgen.transform.reverse.expression import Temporary, _is_scatter


class Merging:
    def merged(self, contributions, v):
        """The contributions one statement makes to one array, as one sum where the last of
        them was (`dL_dz = a + b`, not `dL_dz = a` then `dL_dz = dL_dz + b`); a scatter into
        it, a guarded one and a list's stay apart, and a number's keep the lesson's `=` then
        `+=`, one line per path."""
        def plain(item):
            return not isinstance(item, Temporary) and item[0] != v and item[0] in self.arrays \
                and item[0] not in self.lists \
                and not isinstance(item[1], Cond) and not _is_scatter(item[1]) \
                and not (isinstance(item[1], Call) and item[1].prim in ("zero_at", "list_add_at", "tree_add_at"))
        contributions = self._scatters_merged(contributions, v)
        last, totals = {}, {}
        for k, item in enumerate(contributions):
            if plain(item):
                last[item[0]] = k
                totals[item[0]] = factoring.combined(totals[item[0]], item[1], self.arrays) if item[0] in totals \
                    else item[1]
        named = {c.name for c in contributions if isinstance(c, Temporary)}
        floats = lambda e: self.floats(e, named)  # noqa: E731
        return [(item[0], factoring.factored(totals[item[0]], floats, self._same_shape, self._covers)) if plain(item) and last[item[0]] == k else item
                for k, item in enumerate(contributions) if not plain(item) or last[item[0]] == k]

    def _covers(self, total, ones):
        """Whether `total` surely has the shape of `ones` (np.ones_like(p) or np.ones(shape)):
        both broadcast the same arrays (SameShape.leaf_keys)."""
        same = getattr(self.arrays, "same", None)
        if same is None:
            return False
        want = same.leaf_keys(ones.args[0] if ones.prim == "ones_like" else ones.args[0].args[0])
        return bool(want) and same.leaf_keys(total) == want

    def _same_shape(self, a, b):
        same = getattr(self.arrays, "same", None)
        return same is not None and same.same(a, b) and same.key(a) != sameshape.NUMBER

    def floats(self, e, named=()):
        """Whether e surely holds floats: the code shows it (SameShape.floats), or it is a
        product with a gradient (every adjoint is a float or an array of floats; `named`:
        gradients of subexpressions named in this statement)."""
        same = getattr(self.arrays, "same", None)
        if same is not None and same.floats(e):
            return True
        gradients = self.adj_set | set(named)
        while isinstance(e, Call) and e.prim in ("mul", "div", "neg"):
            if any(isinstance(a, Var) and a.name in gradients for a in e.args):
                return True
            e = e.args[0]
        return isinstance(e, Var) and e.name in gradients

    def _scatters_merged(self, contributions, v):
        """Scatters into one index of one array, as one (`d[:-1] -= a + b`)."""
        out = []
        for item in contributions:
            if not isinstance(item, Temporary) and item[0] != v and item[0] not in self.lists and \
                    _is_scatter(item[1]):
                at = next((j for j in range(len(out) - 1, -1, -1) if not isinstance(out[j], Temporary)
                           and out[j][0] == item[0] and factoring.same_scatter(out[j][1], item[1])), None)
                if at is not None and all(isinstance(o, Temporary) or o[0] != item[0] for o in out[at + 1:]):
                    # (where the later one was: a gradient named between them may be read by it)
                    named = {c.name for c in contributions if isinstance(c, Temporary)}
                    item = (item[0], factoring.factored(factoring.scattered(out.pop(at)[1], item[1]),
                                                      lambda e: self.floats(e, named), self._same_shape,
                                                      self._covers))
            out.append(item)
        return out

    def heirs(self, contributions, v):
        """A named gradient of a subexpression that some variable receives unchanged, as its
        first gradient (`(yhat - y) ** 2`: yhat's), is that variable's adjoint from the start:
        `dL_dyhat = 2 * (yhat - y)`, then `dL_dy = -dL_dyhat`, not a `dL_dL_inner` both read."""
        out, renamed = list(contributions), {}
        for k, item in enumerate(out):
            if not isinstance(item, Temporary):
                continue
            heir = next((j for j in range(k + 1, len(out)) if not isinstance(out[j], Temporary)
                         and out[j][1] == Var(item.name) and self._may_inherit(out[j][0], v, out)), None)
            if heir is None:
                continue
            name = out[heir][0]
            renamed[item.name] = self.adj_name(name)
            out[k] = Temporary(renamed[item.name], item.expr, heir=name)
            del out[heir]
            out[k + 1:] = [Temporary(t.name, _renamed(t.expr, renamed), t.heir) if isinstance(t, Temporary)
                           else (t[0], _renamed(t[1], renamed)) for t in out[k + 1:]]
        return out

    def _may_inherit(self, name, v, contributions):
        """Only a variable whose one gradient here is the named one, and none before (its
        adjoint then holds that value wherever the statement reads it)."""
        return name != v and name not in self.lists and self.state.get(name) is None and \
            sum(1 for c in contributions if isinstance(c, Temporary) and c.heir == name or
                not isinstance(c, Temporary) and c[0] == name) == 1


def _renamed(expr, names):
    """`expr` with the variables of `names` (old -> new name) renamed."""
    if not names:
        return expr
    if isinstance(expr, Var):
        return Var(names.get(expr.name, expr.name))
    if isinstance(expr, Call):
        args = tuple(_renamed(a, names) for a in expr.args)
        return Call(expr.prim, args, expr.ns, expr.loc, expr.params) if args != expr.args else expr
    if isinstance(expr, Cond):
        return Cond(_renamed(expr.test, names), _renamed(expr.body, names), _renamed(expr.orelse, names))
    return expr
