"""Stage 4, reverse: gradients of Python lists, which mirror the lists (gradgen.rules.lists).

`hs.append(v)` forward is a pop from the gradient list backward; a list's gradient is made
(zeros, as long as the list) where the backward pass first meets it, and a contribution
reaches one element, a path into a structured parameter, or every element at once.
"""

from __future__ import annotations

from gradgen.analysis.arrays import may_be_array, may_repeat
from gradgen.ir import simplify
from gradgen.ir.nodes import Assign, Call, Const, Cond, If, IndexAdd, Restore, Spelled, Var
from gradgen.transform.reverse.expression import Temporary, as_float, push_into, takes_a_number


class ListGradients:
    def append(self, stmt):
        """`hs.append(v)` backward: v's gradient is popped from the gradient list, which is
        then exactly as long as hs was before the append. The gradient list is made (zeros,
        as long as hs is now) where the backward pass first meets it, so an append whose
        value is never read still pops, and every later index means the same element."""
        v, (_, value) = stmt.target, stmt.expr.args
        if v not in self.active:
            return []
        out = self.list_gradient(v)
        popped = self.namer.adjoint(self.of, f"{v}_popped")
        self.adj_set.add(popped)
        body = [Assign(popped, Call("pop", (Var(self.adj_name(v)),)))]
        self.zeroed.add(popped)  # (an element no gradient reached is the list's 0.0)
        loose = may_be_array(value, self.arrays)
        if loose and not takes_a_number(value, self.active):
            body += self.shaped(value, Var(popped))
            loose = False
        self.loose = loose  # (what it sends on may be bare too: gradgen.transform.reverse.backward, add)
        contributions = []
        push_into(value, Var(popped), (), self.active, contributions, None, self.arrays,
                  temporary=lambda node: self.temporary(v, node), exact=not loose)
        for item in contributions:
            if isinstance(item, Temporary):
                self.adj_set.add(item.name)
                body.append(Assign(item.name, item.expr))
            else:
                body += self.add(*item)
        self.loose = False
        self.reads[id(stmt)] = (simplify.names_read(body) - self.adj_set) | self.reads.get(id(stmt), set())
        restore = [Restore(v, self.stack(v), id(stmt))] if stmt.overwrites else []
        return restore + out + self.cite(stmt, body)

    def list_gradient(self, v):
        """The statements that make v's gradient list, if the backward pass has none yet."""
        if self.state.get(v) is not None:
            return []
        adj = self.adj_name(v)
        self.state[v] = Var(adj)
        return [Assign(adj, self.zero(v))]

    def shaped_elements(self, stmt, g):
        """`hs = [e0, e1]` backward: the entries of hs's gradient list no gradient reached are
        the list's bare 0.0; one whose element's rule needs an array of its shape (np.stack's
        np.take, a sum along an axis) is made one first (`dhs[0] = dhs[0] + np.zeros_like(hs[0])`)."""
        out = []
        for k, element in enumerate(stmt.expr.args):
            if may_be_array(element, self.arrays) and not takes_a_number(element, self.active) \
                    and _sends(element, self.active, self.arrays):
                entry = Call("getitem", (g, Const(k)), "op", params=(("index", ("i",)),))
                zeros = Call("zeros_like", (Call("getitem", (Var(stmt.target), Const(k)), "op",
                                                 params=(("index", ("i",)),)),), "numpy",
                             params=(("dtype", Spelled("float")),))
                out.append(IndexAdd(g.name, ("i",), (Const(k),), Call("add", (entry, zeros), "op"), assign=True))
        return out

    def add_to_list(self, name, contribution):
        """A gradient reaching list `name`: at one element (`dhs[i] = dhs[i] + g`), or at all
        of them (the rows of np.stack(hs)'s gradient); under the test of a conditional
        expression that read it (`np.stack(hs) if len(hs) > 0 else 0.0`), inside an `if`."""
        if isinstance(contribution, Cond) and simplify.is_zero(contribution.orelse):
            made = self.list_gradient(name)
            return made + [If(contribution.test, self.add_to_list(name, contribution.body), [])]
        adj = self.adj_name(name)
        if isinstance(contribution, Call) and contribution.prim == "tree_add_at":  # dparams[i][0] += g
            g, _, *path = contribution.args
            out = self.list_gradient(name)
            if _picks(path, self.arrays):  # W[idx][0]: a pick from an array, not a part
                return out + [IndexAdd(adj, (), tuple(path), as_float(g), at=True, chained=True)]
            entry = Call("tree_get", (Var(adj), *path), "builtins")
            return out + [IndexAdd(adj, (), tuple(path), simplify.add(entry, as_float(g)), assign=True, chained=True)]
        if isinstance(contribution, Call) and contribution.prim == "tree_add_flat":  # flatten(params[i])'s gradient
            g, _, *path = contribution.args
            out = self.list_gradient(name)
            return out + [Assign(adj, Call("add_flat_at", (Var(adj), as_float(g), *path)))]
        if isinstance(contribution, Call) and contribution.prim == "list_add_at":
            g, _, index = contribution.args
            out = self.list_gradient(name)
            entry = Call("getitem", (Var(adj), index), "op", params=(("index", ("i",)),))
            return out + [IndexAdd(adj, ("i",), (index,), simplify.add(entry, as_float(g)), assign=True)]
        if isinstance(contribution, Var):  # `value = items` (a helper's list, returned): a copy of value's gradient
            contribution = Call("unstack", (contribution,), None, params=(("axis", 0),))
        assert isinstance(contribution, Call) and contribution.prim in ("unstack", "unconcatenate", "unjoin"), contribution
        current = self.state.get(name)
        self.state[name] = Var(adj)
        if current is None:
            return [Assign(adj, contribution)]
        return [Assign(adj, Call("add_lists", (current, contribution), None))]


def _sends(element, active, arrays):
    """Whether a gradient of `element` reaches some active variable (not `np.zeros(W.shape)`)."""
    reached = []
    push_into(element, Var("g"), (), active, reached, None, arrays)
    return bool(reached)


def _picks(path, arrays):
    """Whether a path into a structured gradient has an index array in it that `dW[i][j] =
    dW[i][j] + g` would get wrong: one that may repeat an element at its end, any at all
    before (`dW[idx]` is a copy, which the write would change instead)."""
    *steps, last = path
    sequences = getattr(arrays, "sequences", ())
    return may_repeat(("i",), (last,), arrays) or any(
        may_be_array(step, arrays) or getattr(step, "name", None) in sequences for step in steps)
