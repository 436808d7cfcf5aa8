"""Picking for the Python search (a mixin of `core.Search`): lc0's
GatherMinibatch and PickNodesToExtend (multi-visit PUCT with in-flight
visits and collisions, root pruning, the moves-left utility, two-fold draws
behind a new root), and PrefetchIntoCache (when the batch is small, the
leaves the search will most likely want next, into the NN cache)."""
from __future__ import annotations

import math

from lc0_rocm.search.batch import Visit
from lc0_rocm.search.fastmath import fast_log
from lc0_rocm.search.tree import TWO_FOLD

LOWEST = -3.4028234663852886e38   # float32's lowest: below every score
INT_MAX = 2 ** 31 - 1


class PickingMixin:
    """Needs the Search's tree, walker, params, limits, batch and hints."""

    # Gathering (lc0's GatherMinibatch + PickNodesToExtend)

    def _collisions_left(self, nodes: int) -> int:
        p = self.params
        if nodes >= p.MaxCollisionVisitsScalingEnd:
            return p.MaxCollisionVisits
        if nodes <= p.MaxCollisionVisitsScalingStart:
            return 1
        ratio = ((nodes - p.MaxCollisionVisitsScalingStart)
                 / (p.MaxCollisionVisitsScalingEnd - p.MaxCollisionVisitsScalingStart)
                 ) ** p.MaxCollisionVisitsScalingPower
        return int(math.floor(1 + (p.MaxCollisionVisits - 1) * ratio + 0.5))

    def _gather_minibatch(self) -> int:
        """Fill self.batch; returns how many leaves were backed up out of order."""
        tree = self.tree
        minibatch_size = 0
        remaining = max(1, self.remaining_playouts)
        collisions_left = self._collisions_left(min(tree.n[0], remaining))
        ooo = 0
        batch = self.batch
        strict_nodes = self.params.StrictNodes and self.limits.nodes is not None
        while minibatch_size < self.target_minibatch and ooo < self.max_out_of_order:
            if minibatch_size > 0 and not self.nn_requests:
                return ooo       # something to back up without the network: do it now
            limit = min(collisions_left, self.target_minibatch - minibatch_size, self.max_out_of_order - ooo)
            if strict_nodes:
                # No visit past the node limit: at it (the pipelined batch
                # holds the rest) the gathering ends, empty or not.
                to_limit = self._node_limit_left()
                if to_limit <= 0:
                    return ooo
                limit = min(limit, to_limit)
            new_start = len(batch)
            self._pick(limit)
            new = batch[new_start:]
            minibatch_size += sum(1 for v in new if not v.collision)
            if any(v.ooo_done for v in new):
                # Back up out-of-order results now; drop this pick's
                # collisions (they will mostly be picked again).
                kept = []
                for v in new:
                    if v.collision:
                        self._cancel_in_flight(v.node, v.multivisit)
                    elif v.ooo_done:
                        self._backup(v)
                        minibatch_size -= 1
                        ooo += 1
                    else:
                        kept.append(v)
                del batch[new_start:]
                batch.extend(kept)
                new = kept
            for v in new:
                if not v.collision:
                    continue
                if v.maxvisit > 0 and collisions_left > v.multivisit:
                    extra = min(v.maxvisit, collisions_left) - v.multivisit
                    v.multivisit += extra
                    node = tree.parent[v.node]
                    while node >= 0:
                        tree.n_in_flight[node] += extra
                        node = tree.parent[node]
                collisions_left -= v.multivisit
                if collisions_left <= 0:
                    return ooo
                if self.limits.stop is not None and self.limits.stop.is_set():
                    return ooo
        return ooo

    def _node_limit_left(self) -> int:
        """StrictNodes: visits a gathering may still start under the node
        limit, those in flight (a pipelined batch's too) counted as done."""
        counted = self.total_playouts if self.params.NodesAsPlayouts else self.total_nodes
        # A limit of 0 still leaves the root's first visit (nothing stops a
        # search before it).
        return max(1, self.limits.nodes) - counted - self.tree.n_in_flight[0]

    def _pick(self, limit: int) -> None:
        self.max_limit = INT_MAX
        self.pick_limit = limit
        if self.root_filter or self.current_best >= 0:
            self._root_allowed = self._root_allowed_edges()
        else:
            self._root_allowed = None
        self._pick_node(0, limit, 1, True)

    def _root_allowed_edges(self):
        """Root edges the picker may choose: with few playouts left, only
        those that could still catch the best (lc0's root pruning), and only
        `searchmoves` when given."""
        tree = self.tree
        best_n = 0
        if self.current_best >= 0:
            c = tree.e_child[self.current_best]
            best_n = tree.n[c] if c >= 0 else 0
        remaining = max(1, self.remaining_playouts)
        allowed = []
        for j in tree.edges(0):
            c = tree.e_child[j]
            n = tree.n[c] if c >= 0 else 0
            ok = j == self.current_best or not remaining < best_n - n
            if ok and self.root_filter and tree.e_move[j] not in self.root_filter:
                ok = False
            allowed.append(ok)
        return allowed

    def _fpu(self, node: int, is_root: bool, draw_score: float, visited_pol: float) -> float:
        absolute, value = self.params.fpu(is_root)
        if absolute:
            return value
        tree = self.tree
        return -(tree.wl[node] - draw_score * tree.d[node]) - value * math.sqrt(visited_pol)

    def _cpuct(self, n: int, is_root: bool) -> float:
        init, base, factor = self.params.cpuct(is_root)
        return init + (factor * fast_log((n + base) / base) if factor else 0.0)

    def _pick_node(self, node: int, limit: int, depth: int, is_root: bool) -> None:
        """Send `limit` visits into `node` (walker is at node; depth 1 = root)."""
        tree = self.tree
        n_arr, nif, term = tree.n, tree.n_in_flight, tree.terminal
        if n_arr[node] == 0 or term[node]:
            if is_root and self._try_start(node):
                limit -= 1
                self._visit(node, depth)
            if limit > 0:
                max_count = self.max_limit if (limit == self.pick_limit and self.max_limit > limit) else 0
                self.batch.append(Visit(node, depth, True, limit, max_count))
            return
        if is_root:
            nif[node] += limit

        first = tree.first_edge[node]
        num_edges = tree.num_edges[node]
        if is_root and self.root_filter:
            max_needed = num_edges
        else:
            max_needed = min(num_edges, n_arr[node] + nif[node] + limit + 2)
        e_p, e_child = tree.e_p, tree.e_child
        wl, d_arr = tree.wl, tree.d
        pol = e_p[first:first + max_needed]
        draw_score = self.draw_score_odd if depth % 2 == 0 else self.draw_score_even

        util = [None] * max_needed
        nstarted = [0] * max_needed
        visited_pol = 0.0
        m_eval = self._m_evaluator(node) if self.has_mlh else None
        for k in range(num_edges):
            c = e_child[first + k]
            if c < 0:
                continue
            if k < max_needed:
                nstarted[k] = n_arr[c] + nif[c]
            if n_arr[c] > 0:
                visited_pol += e_p[first + k]
                if k < max_needed:
                    q = wl[c] + draw_score * d_arr[c]
                    util[k] = q + (m_eval(c, q) if m_eval else 0.0)
        fpu = self._fpu(node, is_root, draw_score, visited_pol)
        util = [fpu if u is None else u for u in util]

        cpuct = self._cpuct(n_arr[node], is_root)
        puct_mult = cpuct * math.sqrt(max(n_arr[node] - 1, 1))
        score = [pol[k] * puct_mult / (1 + nstarted[k]) + util[k] for k in range(max_needed)]
        allowed = self._root_allowed if is_root else None
        visits_to_perform = [0] * max_needed
        walker = self.walker

        while limit > 0:
            best = LOWEST
            second = LOWEST
            best_idx = -1
            best_without_u = LOWEST
            have_second = False
            can_exit = False
            for idx in range(max_needed):
                if allowed is not None and not allowed[idx]:
                    continue
                s = score[idx]
                if s > best:
                    if best_idx >= 0:
                        have_second = True
                    second = best
                    best = s
                    best_idx = idx
                    best_without_u = util[idx]
                elif s > second:
                    second = s
                    have_second = True
                if can_exit:
                    break
                if nstarted[idx] == 0:
                    can_exit = True   # edges are sorted by prior: one more suffices
            if best_idx < 0:
                break
            if have_second:
                estimated = INT_MAX
                if best_without_u < second:
                    n1 = nstarted[best_idx] + 1
                    estimated = int(max(1.0, min(
                        pol[best_idx] * puct_mult / (second - best_without_u) - n1 + 1, 1e9)))
                if estimated < self.max_limit:
                    self.max_limit = estimated
                new_visits = min(limit, estimated)
            else:
                new_visits = limit
            visits_to_perform[best_idx] += new_visits
            limit -= new_visits
            child = tree.child(node, best_idx)
            if term[child] == TWO_FOLD:
                self._ensure_two_fold_correct(child, depth)
            started = False
            if self._try_start(child):
                nstarted[best_idx] += 1
                new_visits -= 1
                started = True
                if n_arr[child] > 0 and not term[child]:
                    nif[child] += new_visits
                    nstarted[best_idx] += new_visits
                score[best_idx] = pol[best_idx] * puct_mult / (1 + nstarted[best_idx]) + util[best_idx]
            if started and (n_arr[child] == 0 or term[child]):
                visits_to_perform[best_idx] -= 1
                walker.push(tree.e_move[first + best_idx])
                self._visit(child, depth + 1)
                walker.pop()

        for idx in range(max_needed):
            k = visits_to_perform[idx]
            if k > 0:
                child = tree.child(node, idx)
                if n_arr[child] == 0 or term[child]:
                    # Only a collision can happen there: no need for the board.
                    self._pick_node(child, k, depth + 1, False)
                    continue
                walker.push(tree.e_move[first + idx])
                self._pick_node(child, k, depth + 1, False)
                walker.pop()

    def _try_start(self, node: int) -> bool:
        tree = self.tree
        if tree.n[node] == 0 and tree.n_in_flight[node] > 0:
            return False
        tree.n_in_flight[node] += 1
        return True

    def _m_evaluator(self, parent: int):
        """lc0's MEvaluator for children of `parent`: a utility that prefers
        shorter wins and longer losses; None when the parent's |Q| is below
        the threshold."""
        tree = self.tree
        p = self.params
        threshold = p.MovesLeftThreshold
        if not abs(tree.wl[parent]) > threshold:
            return None
        parent_m = tree.m[parent]
        slope, cap = p.MovesLeftSlope, p.MovesLeftMaxEffect
        a_c, a_l, a_s = p.MovesLeftConstantFactor, p.MovesLeftScaledFactor, p.MovesLeftQuadraticFactor
        m_arr = tree.m

        def utility(child: int, q: float) -> float:
            m = min(max(slope * (m_arr[child] - parent_m), -cap), cap)
            m *= math.copysign(1.0, -q)
            if 0.0 < threshold < 1.0:
                q = max(0.0, abs(q) - threshold) / (1.0 - threshold)
            return m * (a_c + a_l * abs(q) + a_s * q * q)
        return utility

    def _ensure_two_fold_correct(self, child: int, depth: int) -> None:
        """A two-fold draw whose first occurrence lies before the (new) root
        is no draw now: undo its visits and make it searchable again."""
        tree = self.tree
        if not (tree.terminal[child] == TWO_FOLD and depth < tree.m[child]):
            return
        wl, d, m, visits = tree.wl[child], tree.d[child], tree.m[child], tree.n[child]
        counter = 0
        node = child
        while node >= 0:
            tree.revert_terminal_visits(node, wl, d, m + counter, visits)
            counter += 1
            if counter > depth:
                break
            node = tree.parent[node]
        tree.make_not_terminal(child)
        self.initial_visits -= visits

    # Prefetch (lc0's PrefetchIntoCache): when the batch is small, add the
    # leaves the search will most likely want next; they only fill the cache.

    def _stop_requested(self) -> bool:
        return self.stopped or (self.limits.stop is not None and self.limits.stop.is_set())

    def _prefetch(self, node: int, budget: int, is_odd_depth: bool, is_root: bool) -> int:
        if budget <= 0:
            return 0
        tree = self.tree
        walker = self.walker
        if node < 0 or tree.n[node] + tree.n_in_flight[node] == 0:
            key = (walker.keys[-1], walker.repetitions[-1])
            if self.cache is not None and self.cache.get(key, count=False) is not None:
                return 1
            moves, request = self.evaluator.prepare(walker.board, walker)
            self.prefetch.append((len(self.nn_requests), moves, key))
            self.nn_requests.append(request)
            return 1
        if tree.n[node] == 0 or tree.terminal[node]:
            return 0
        draw_score = self.draw_score_odd if is_odd_depth else self.draw_score_even
        n_arr, nif, wl, d_arr = tree.n, tree.n_in_flight, tree.wl, tree.d
        puct_mult = self._cpuct(n_arr[node], is_root) * math.sqrt(max(n_arr[node] - 1, 1))
        fpu = self._fpu(node, is_root, draw_score, tree.visited_policy(node))
        scored = []
        for j in tree.edges(node):
            c = tree.e_child[j]
            nstarted = n_arr[c] + nif[c] if c >= 0 else 0
            q = wl[c] + draw_score * d_arr[c] if c >= 0 and n_arr[c] > 0 else fpu
            scored.append((-(tree.e_p[j] * puct_mult / (1 + nstarted)) - q, j))
        scored.sort(key=lambda t: t[0])
        total = 0
        budget_to_spend = budget
        for i, (_, j) in enumerate(scored):
            if budget <= 0:
                break
            c = tree.e_child[j]
            if i != len(scored) - 1:
                next_score = -scored[i + 1][0]
                # lc0 uses -fpu as the default here (a quirk kept for parity).
                q = wl[c] + draw_score * d_arr[c] if c >= 0 and n_arr[c] > 0 else -fpu
                if next_score > q:
                    nstarted = n_arr[c] + nif[c] if c >= 0 else 0
                    budget_to_spend = min(budget, int(tree.e_p[j] * puct_mult / (next_score - q)
                                                      - nstarted) + 1)
                else:
                    budget_to_spend = budget
            if budget_to_spend <= 0 or (c >= 0 and n_arr[c] + nif[c] > 0
                                        and (n_arr[c] == 0 or tree.terminal[c])):
                continue     # spends nothing there: skip the board move
            walker.push(tree.e_move[j])
            spent = self._prefetch(c, budget_to_spend, not is_odd_depth, False)
            walker.pop()
            budget -= spent
            total += spent
        return total
