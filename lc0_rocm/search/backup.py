"""Backing up for the Python search (a mixin of `core.Search`): lc0's
DoBackupUpdateSingleNode (running averages of W-L, D and M up to the root,
in-flight visits released) and MaybeSetBounds (certainty propagation:
proven results make their parents terminal or bound them)."""
from __future__ import annotations

from lc0_rocm.search.batch import Visit
from lc0_rocm.search.tree import END_OF_GAME, LOSS, NON_TERMINAL, TABLEBASE, WIN


class BackupMixin:
    """Needs the Search's tree, params, current best edge and counters."""

    # Backup (lc0's DoBackupUpdateSingleNode + MaybeSetBounds)

    def _cancel_in_flight(self, node: int, visits: int) -> None:
        tree = self.tree
        node = tree.parent[node]
        while node >= 0:
            tree.n_in_flight[node] -= visits
            node = tree.parent[node]

    def _backup(self, visit: Visit) -> None:
        tree = self.tree
        wl, d_arr, m_arr, n_arr, nif, term, parent = (
            tree.wl, tree.d, tree.m, tree.n, tree.n_in_flight, tree.terminal, tree.parent)
        node = visit.node
        mv = visit.multivisit
        update_bounds = self.params.StickyEndgames and term[node] != NON_TERMINAL and n_arr[node] == 0
        v, d, m = visit.q, visit.d, visit.m
        n_to_fix = 0
        v_delta = d_delta = m_delta = 0.0
        while True:
            p = parent[node]
            if term[node]:
                v, d, m = wl[node], d_arr[node], m_arr[node]
            n_new = n_arr[node] + mv
            wl[node] += mv * (v - wl[node]) / n_new
            d_arr[node] += mv * (d - d_arr[node]) / n_new
            m_arr[node] += mv * (m - m_arr[node]) / n_new
            n_arr[node] = n_new
            nif[node] -= mv
            if n_to_fix > 0 and not term[node]:
                wl[node] += n_to_fix * v_delta / n_new
                d_arr[node] += n_to_fix * d_delta / n_new
                m_arr[node] += n_to_fix * m_delta / n_new
            if p < 0:
                break
            old_update_bounds = update_bounds
            if term[p]:
                n_to_fix = 0
            if update_bounds and p != 0 and not term[p]:
                fixed = self._maybe_set_bounds(p, m)
                update_bounds = fixed is not None
                if fixed is not None and fixed[0] is not None:
                    n_to_fix, v_delta, d_delta, m_delta = fixed
            else:
                update_bounds = False
            v = -v
            v_delta = -v_delta
            m += 1
            if p == 0:
                best_c = tree.e_child[self.current_best] if self.current_best >= 0 else -1
                best_n = n_arr[best_c] if best_c >= 0 else 0
                if (old_update_bounds and term[node]) or (node != best_c and best_n <= n_arr[node]):
                    self._update_current_best()
            node = p
        self.total_playouts += mv
        self.cum_depth += visit.depth * mv
        if visit.depth > self.max_depth:
            self.max_depth = visit.depth

    def _maybe_set_bounds(self, p: int, m: float):
        """Certainty propagation. None: parent stays a regular node. Else a
        tuple (n_to_fix, v_delta, d_delta, m_delta) when the parent became
        terminal, (None,) * 4 when only its bounds changed."""
        tree = self.tree
        losing_m = 0.0
        prefer_tb = False
        lower = upper = LOSS
        for j in tree.edges(p):
            c = tree.e_child[j]
            if c >= 0:
                e_lower, e_upper = tree.lower[c], tree.upper[c]
                is_tb = tree.terminal[c] == TABLEBASE
            else:
                e_lower, e_upper, is_tb = LOSS, WIN, False
            lower = max(lower, e_lower)
            upper = max(upper, e_upper)
            if e_lower == WIN and not is_tb:
                prefer_tb = False
                break
            elif e_upper == LOSS:
                losing_m = max(losing_m, tree.m[c] if c >= 0 and tree.n[c] > 0 else 0.0)
            prefer_tb = prefer_tb or is_tb
        if lower == LOSS and upper == WIN:
            return None
        if lower == upper:
            n_to_fix = tree.n[p]
            cur_v, cur_d, cur_m = tree.wl[p], tree.d[p], tree.m[p]
            plies = (max(losing_m, m) if upper == LOSS else m) + 1.0
            tree.make_terminal(p, -upper, plies, TABLEBASE if prefer_tb else END_OF_GAME)
            return (n_to_fix, -(tree.wl[p] - cur_v), tree.d[p] - cur_d, tree.m[p] - cur_m)
        tree.lower[p], tree.upper[p] = -upper, -lower
        return (None, None, None, None)
