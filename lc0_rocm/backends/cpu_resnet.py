"""numpy float32 forward pass for convolution-body nets (ResNets, SE-ResNets).

Layout: activations are kept channels-last (NHWC) inside zero-padded
(N, 10, 10, C) buffers, so a 3x3 convolution is a strided copy plus BLAS
matmuls (Winograd F(2x2,3x3) by default, or im2col / F(4x4,3x3)), and the
padding border never needs clearing. Batch
norm is folded into the convolutions at load time, dense layers that read a
flattened channel-major (c*64 + square) head are permuted once to read the
channels-last flatten (square*C + c) instead, and buffers are reused between
calls of the same batch size; a lock serializes forward() calls from several
threads (they would share those buffers).
"""
from __future__ import annotations

import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from lc0_rocm._proto import net_pb2
from lc0_rocm.backends.base import checked_planes, wdl_from_classical
from lc0_rocm.netspec import BN_EPSILON, NetSpec
from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE, SQUARES
from lc0_rocm.weights import WeightsError

NF = net_pb2.NetworkFormat
CONV_BODIES = (NF.NETWORK_CLASSICAL, NF.NETWORK_SE,
               NF.NETWORK_CLASSICAL_WITH_HEADFORMAT, NF.NETWORK_SE_WITH_HEADFORMAT)
F32 = np.float32
MAX_CHUNK = 128  # larger batches run in chunks of this many positions


# ---------------------------------------------------------------- activations
def relu_(x):
    np.maximum(x, 0, out=x)


def mish_(x):
    # mish(x) = x * tanh(softplus(x)) = x * n / (n + 2) with n = e^2x + 2e^x;
    # exp is clamped where the ratio is already 1 in float32.
    e = np.exp(np.minimum(x, 20, dtype=F32))
    n = e * (e + 2)
    np.multiply(x, n / (n + 2), out=x)


ACTIVATE_INPLACE = {NF.ACTIVATION_RELU: relu_, NF.ACTIVATION_MISH: mish_}


def sigmoid(x):
    # exp clamped where 1 / (1 + e^t) is 0 in float32 anyway: no overflow warning
    return F32(1) / (F32(1) + np.exp(np.minimum(-x, F32(88))))


# ---------------------------------------------------------------- weights prep
def _present(array) -> bool:
    return array is not None and len(array) > 0


def _need(array, name):
    if array is None or len(array) == 0:
        raise WeightsError(f"convolution-body net: missing tensor {name}")
    return array


def fold_conv(block, name, inputs, kernel):
    """ConvBlock -> (weights (K, inputs, k, k), biases (K,)) with batch norm
    folded in: w' = w * g / sqrt(var + eps), b' = beta - g * (mean - b) / sqrt(var + eps)."""
    if block is None:
        raise WeightsError(f"convolution-body net: missing convolution {name}")
    w = _need(block.weights, f"{name}.weights")
    means, var = block.bn_means, block.bn_stddivs
    has_bn = _present(means)
    outputs = len(means) if has_bn else len(_need(block.biases, f"{name}.biases"))
    if outputs == 0 or w.size != outputs * inputs * kernel * kernel:
        raise WeightsError(
            f"{name}.weights has {w.size} values; expected {outputs} x {inputs} x "
            f"{kernel} x {kernel} = {outputs * inputs * kernel * kernel}")
    w = w.reshape(outputs, inputs, kernel, kernel).astype(F32)
    b = block.biases if _present(block.biases) else np.zeros(outputs, F32)
    if len(b) != outputs:
        raise WeightsError(f"{name}.biases has {len(b)} values; expected {outputs}")
    if not has_bn:
        return w, b.astype(F32)
    # Old files without gammas/betas: lc0 uses ones and zeros.
    gammas = block.bn_gammas if _present(block.bn_gammas) else np.ones(outputs, F32)
    betas = block.bn_betas if _present(block.bn_betas) else np.zeros(outputs, F32)
    for arr, field in ((var, "bn_stddivs"), (gammas, "bn_gammas"), (betas, "bn_betas")):
        if arr is None or len(arr) != outputs:
            raise WeightsError(f"{name}.{field} has {0 if arr is None else len(arr)} values; "
                               f"expected {outputs}")
    scale = (gammas / np.sqrt(var + F32(BN_EPSILON))).astype(F32)
    return (w * scale[:, None, None, None]).astype(F32), (betas - scale * (means - b)).astype(F32)


def conv3_matrix(w):
    """(K, C, 3, 3) -> (9C, K) matching im2col columns ordered (ky, kx, c)."""
    k, c = w.shape[:2]
    return np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(9 * c, k))


# Winograd F(m x m, 3x3) (Lavin & Gray): an 8x8 board is (8/m)^2 output
# tiles of m x m, each read from an (m+2)^2 input tile of the padded 10x10
# board; per tile y = A^T [(G g G^T) * (B^T d B)] A. The 1-D matrices come
# from Toom-Cook interpolation at the points below (plus infinity); the 2-D
# transforms are one matmul each with their Kronecker products. Points
# -1, 1, 1/2, -2 keep F(4x4)'s float32 error lower than the usual +-1, +-2.
WINOGRAD_POINTS = {2: (0.0, 1.0, -1.0), 4: (0.0, -1.0, 1.0, 0.5, -2.0)}


def toom_cook_matrices(m, r=3):
    """(B^T (n, n), G (n, r), A^T (m, n)), n = m + r - 1, for F(m, r)."""
    points = WINOGRAD_POINTS[m]
    n = m + r - 1

    def vandermonde(cols):
        v = np.zeros((n, cols))
        for j, p in enumerate(points):
            v[j] = [p ** k for k in range(cols)]
        v[n - 1, cols - 1] = 1.0  # the point at infinity picks the leading coefficient
        return v

    bt = np.linalg.inv(vandermonde(n)).T
    g = vandermonde(r)
    # Move row scales of B^T into G (exact in float64, rounded once with the filters).
    scale = np.abs(bt).max(axis=1)
    return bt / scale[:, None], g * scale[:, None], vandermonde(m).T


class Winograd:
    """Transforms for F(m x m, 3x3) on 8x8 boards."""

    def __init__(self, m):
        bt, self.g, at = toom_cook_matrices(m)
        self.m, self.a, self.tiles = m, m + 2, (8 // m) ** 2
        self.input_transform = np.kron(bt, bt).astype(F32)     # (a^2, a^2)
        self.output_transform = np.kron(at, at).astype(F32)    # (m^2, a^2)

    def filters(self, w):
        """(K, C, 3, 3) -> (a^2, C, K): G g G^T per filter, in float64 then rounded."""
        k, c = w.shape[:2]
        u = np.einsum("ai,kcij,bj->abck", self.g, w.astype(np.float64), self.g)
        return np.ascontiguousarray(u.reshape(self.a * self.a, c, k), dtype=F32)

    def input_tiles(self, padded):
        """(a, a, N, T, T, C) view of padded (N, 10, 10, C): the input tiles."""
        s0, s1, s2, s3 = padded.strides
        n, c, t, m = padded.shape[0], padded.shape[3], 8 // self.m, self.m
        return as_strided(padded, (self.a, self.a, n, t, t, c),
                          (s1, s2, s0, m * s1, m * s2, s3), writeable=False)

    def output_tiles(self, board):
        """(m, m, N, T, T, K) writable view of an (N, 8, 8, K) array or view."""
        s0, s1, s2, s3 = board.strides
        n, k, t, m = board.shape[0], board.shape[3], 8 // self.m, self.m
        return as_strided(board, (m, m, n, t, t, k), (s1, s2, s0, m * s1, m * s2, s3))


WINOGRAD = {"winograd2": Winograd(2), "winograd4": Winograd(4)}


def dense(w, b, outputs, inputs, w_name, b_name):
    """Dense layer [out][in] -> (in, out) matrix for x @ W, and bias."""
    w = _need(w, w_name)
    if w.size != outputs * inputs:
        raise WeightsError(f"{w_name} has {w.size} values; expected {outputs} x {inputs}")
    b = _need(b, b_name)
    if len(b) != outputs:
        raise WeightsError(f"{b_name} has {len(b)} values; expected {outputs}")
    return np.ascontiguousarray(w.reshape(outputs, inputs).T, dtype=F32), b.astype(F32)


def channel_major_to_nhwc_rows(w_t, channels):
    """Rows of an (channels*64, out) matrix indexed c*64+s -> indexed s*channels+c."""
    out = w_t.shape[1]
    return np.ascontiguousarray(
        w_t.reshape(channels, SQUARES, out).transpose(1, 0, 2).reshape(channels * SQUARES, out))


class Conv3:
    def __init__(self, block, name, inputs, algorithm):
        w, self.bias = fold_conv(block, name, inputs, 3)
        self.inputs, self.outputs = inputs, w.shape[0]
        # Only the chosen algorithm's filters: big nets would not fit all of them.
        self.matrix = WINOGRAD[algorithm].filters(w) if algorithm in WINOGRAD else conv3_matrix(w)


class Conv1:
    def __init__(self, block, name, inputs):
        w, self.bias = fold_conv(block, name, inputs, 1)
        self.outputs = w.shape[0]
        self.matrix = np.ascontiguousarray(w.reshape(self.outputs, inputs).T)


class Residual:
    def __init__(self, res, index, channels, algorithm):
        self.conv1 = Conv3(res.conv1, f"residual[{index}].conv1", channels, algorithm)
        self.conv2 = Conv3(res.conv2, f"residual[{index}].conv2", channels, algorithm)
        if self.conv1.outputs != channels or self.conv2.outputs != channels:
            raise WeightsError(f"residual[{index}]: filters differ from the input's {channels}")
        self.se = None
        se = res.se
        if se is not None and _present(se.w1):
            hidden = len(_need(se.b1, f"residual[{index}].se.b1"))
            w1, b1 = dense(se.w1, se.b1, hidden, channels,
                           f"residual[{index}].se.w1", f"residual[{index}].se.b1")
            w2, b2 = dense(se.w2, se.b2, 2 * channels, hidden,
                           f"residual[{index}].se.w2", f"residual[{index}].se.b2")
            self.se = ((w1 / F32(SQUARES)).astype(F32), b1, w2, b2)


# ---------------------------------------------------------------- buffers
class Buffers:
    """Work memory for one batch size; padding borders stay zero forever."""

    def __init__(self, n, channels, max_inputs, max_outputs, algorithm):
        self.n = n
        self.inp = np.zeros((n, 10, 10, NUM_PLANES), F32)
        self.x = np.zeros((n, 10, 10, channels), F32)
        self.h = np.zeros((n, 10, 10, channels), F32)
        self.out = np.empty(n * SQUARES * max_outputs, F32)
        self.flow = np.empty((n * SQUARES, channels), F32)
        # The convolution's product before bias: 64 values a board and output channel
        self.product = np.empty(n * SQUARES * max_outputs, F32)
        padded = (self.inp, self.x, self.h)
        wino = WINOGRAD.get(algorithm)
        if wino is None:  # im2col: 9 values per input channel and square
            self.cols = np.empty(n * SQUARES * 9 * max_inputs, F32)
            self.windows = {id(a): windows(a) for a in padded}
            return
        # Winograd: (m+2)^2 values per tile and channel, (8/m)^2 tiles a board
        per_board = wino.a * wino.a * wino.tiles
        self.tiles_in = np.empty(n * per_board * max_inputs, F32)
        self.tiles_in_t = np.empty(n * per_board * max_inputs, F32)
        self.tiles_out = np.empty(n * per_board * max_outputs, F32)
        self.input_tiles = {id(a): wino.input_tiles(a) for a in padded}
        self.interior_tiles = {id(a): wino.output_tiles(interior(a)) for a in padded}
        self.out_tiles = {}  # output channels -> tiles view of `out`


def windows(padded):
    """(N, 8, 8, 3, 3, C) view of padded (N, 10, 10, C): the 3x3 window
    (ky, kx) around each output square, for im2col."""
    s = padded.strides
    n, _, _, c = padded.shape
    return as_strided(padded, (n, 8, 8, 3, 3, c), (s[0], s[1], s[2], s[1], s[2], s[3]),
                      writeable=False)


def interior(padded):
    return padded[:, 1:9, 1:9, :]


# ---------------------------------------------------------------- model
class ResNetModel:
    """Forward pass of one convolution-body net (see backends/base.py)."""

    ALGORITHMS = ("im2col", *WINOGRAD)

    def __init__(self, weights, algorithm: str = "winograd2"):
        """`algorithm` for 3x3 convolutions: "im2col" (direct: one strided copy
        and one matmul), "winograd2" / "winograd4" (Winograd F(2x2,3x3) /
        F(4x4,3x3): 2.25x / 4x fewer multiplies, F(4x4) with ~5x the float32
        rounding error)."""
        if algorithm not in self.ALGORITHMS:
            raise ValueError(f"algorithm must be one of {self.ALGORITHMS}, got {algorithm!r}")
        self.algorithm = algorithm
        fmt, net = weights.format, weights.net
        if fmt.network not in CONV_BODIES:
            raise WeightsError(f"not a convolution-body net: {NF.NetworkStructure.Name(fmt.network)}")
        self.input = Conv3(net.input, "input", NUM_PLANES, algorithm)
        c = self.channels = self.input.outputs
        self.residual = [Residual(r, i, c, algorithm) for i, r in enumerate(net.residual)]
        # Activations as NetSpec resolves them (read once the body is known to be whole).
        self.spec = NetSpec.from_weights(weights)
        self.activate_ = ACTIVATE_INPLACE[self.spec.default_activation]
        # lc0 evaluates the `vanilla` policy and `winner` value heads (the
        # top-level fields of a single-head file).
        self._init_policy(fmt, weights.policy_head(), c)
        self._init_value(fmt, weights.value_head(), c)
        self._init_moves_left(fmt, net, c)
        self._buffers: dict[int, Buffers] = {}
        self._lock = threading.Lock()

    # ---- heads
    def _init_policy(self, fmt, head, c):
        self.policy_kind = fmt.policy or NF.POLICY_CLASSICAL
        if self.policy_kind == NF.POLICY_CONVOLUTION:
            from lc0_rocm import tables
            self.policy1 = Conv3(head.policy1, "policy1", c, self.algorithm)
            self.policy = Conv3(head.policy, "policy", self.policy1.outputs, self.algorithm)
            planes = self.policy.outputs
            gather = np.asarray(tables.CONV_POLICY_GATHER, dtype=np.int64)
            if gather.shape != (POLICY_SIZE,) or gather.max() >= planes * SQUARES:
                raise WeightsError(f"convolution policy: {planes} output planes do not fit the policy map")
            # lc0 indexes the conv output channel-major (c*64+s); ours is s*planes+c.
            self.policy_gather = (gather % SQUARES) * planes + gather // SQUARES
        elif self.policy_kind == NF.POLICY_CLASSICAL:
            self.policy = Conv1(head.policy, "policy", c)
            planes = self.policy.outputs
            w, self.policy_ip_b = dense(head.ip_pol_w, head.ip_pol_b, POLICY_SIZE, planes * SQUARES,
                                        "ip_pol_w", "ip_pol_b")
            self.policy_ip_w = channel_major_to_nhwc_rows(w, planes)
        elif self.policy_kind == NF.POLICY_ATTENTION:
            from lc0_rocm.backends.cpu_attention import AttentionPolicy
            self.attention_policy = AttentionPolicy(head, self.spec, c)
        else:
            raise WeightsError(f"unsupported policy format {NF.PolicyFormat.Name(fmt.policy)} "
                               "for a convolution body")

    def _init_value(self, fmt, head, c):
        self.value = Conv1(head.value, "value", c)
        planes = self.value.outputs
        hidden = len(_need(head.ip1_val_b, "ip1_val_b"))
        w, self.value_ip1_b = dense(head.ip1_val_w, head.ip1_val_b, hidden, planes * SQUARES,
                                    "ip1_val_w", "ip1_val_b")
        self.value_ip1_w = channel_major_to_nhwc_rows(w, planes)
        if fmt.value == NF.VALUE_WDL:
            self.wdl = True
        elif fmt.value in (NF.VALUE_CLASSICAL, NF.VALUE_UNKNOWN):
            self.wdl = False
        else:
            raise WeightsError(f"unsupported value format {NF.ValueFormat.Name(fmt.value)}")
        self.value_ip2_w, self.value_ip2_b = dense(
            head.ip2_val_w, head.ip2_val_b, 3 if self.wdl else 1, hidden, "ip2_val_w", "ip2_val_b")

    def _init_moves_left(self, fmt, net, c):
        self.has_moves_left = fmt.moves_left == NF.MOVES_LEFT_V1
        if not self.has_moves_left:
            return
        self.moves_left = Conv1(net.moves_left, "moves_left", c)
        planes = self.moves_left.outputs
        hidden = len(_need(net.ip1_mov_b, "ip1_mov_b"))
        w, self.mov_ip1_b = dense(net.ip1_mov_w, net.ip1_mov_b, hidden, planes * SQUARES,
                                  "ip1_mov_w", "ip1_mov_b")
        self.mov_ip1_w = channel_major_to_nhwc_rows(w, planes)
        self.mov_ip2_w, self.mov_ip2_b = dense(net.ip2_mov_w, net.ip2_mov_b, 1, hidden,
                                               "ip2_mov_w", "ip2_mov_b")

    # ---- buffers
    def buffers(self, n: int) -> Buffers:
        buf = self._buffers.get(n)
        if buf is None:
            if len(self._buffers) >= 4:  # keep memory bounded for varying batch sizes
                self._buffers.pop(next(iter(self._buffers)))
            outputs = max(self.channels,
                          self.policy.outputs if self.policy_kind == NF.POLICY_CONVOLUTION else 0)
            buf = self._buffers[n] = Buffers(n, self.channels, max(NUM_PLANES, self.channels),
                                             outputs, self.algorithm)
        return buf

    def conv3(self, buf, padded, conv, dst=None):
        """3x3 same-padding convolution plus bias of padded (N,10,10,C).

        Writes into the interior of the padded buffer `dst`, or (dst None)
        returns it as an (N*64, K) channels-last view of buf.out."""
        n, k = padded.shape[0], conv.outputs
        if dst is None:
            out = buf.out[:n * SQUARES * k].reshape(n * SQUARES, k)
            target = out.reshape(n, 8, 8, k)
        else:
            out, target = None, interior(dst)
        if self.algorithm in WINOGRAD:
            wino = WINOGRAD[self.algorithm]
            y = self.winograd_conv3(buf, padded, conv, wino)
            if dst is None:
                tiles = buf.out_tiles.get(k)
                if tiles is None:
                    tiles = buf.out_tiles[k] = wino.output_tiles(target)
            else:
                tiles = buf.interior_tiles[id(dst)]
            np.add(y, conv.bias, out=tiles)
        else:
            y = self.im2col_conv3(buf, padded, conv)
            np.add(y.reshape(target.shape), conv.bias, out=target)
        return out

    def im2col_conv3(self, buf, padded, conv):
        n, c, k = padded.shape[0], conv.inputs, conv.outputs
        cols = buf.cols[:n * SQUARES * 9 * c].reshape(n, 8, 8, 3, 3, c)
        np.copyto(cols, buf.windows[id(padded)])
        y = buf.product[:n * SQUARES * k].reshape(n * SQUARES, k)
        np.matmul(cols.reshape(n * SQUARES, 9 * c), conv.matrix, out=y)
        return y

    def winograd_conv3(self, buf, padded, conv, wino):
        """Winograd product -> (m, m, N, T, T, K) output tiles (no bias yet)."""
        n, c, k = padded.shape[0], conv.inputs, conv.outputs
        a2, tiles, t = wino.a * wino.a, n * wino.tiles, 8 // wino.m
        d = buf.tiles_in[:a2 * tiles * c].reshape(wino.a, wino.a, n, t, t, c)
        np.copyto(d, buf.input_tiles[id(padded)])
        v = buf.tiles_in_t[:a2 * tiles * c].reshape(a2, tiles * c)
        np.matmul(wino.input_transform, d.reshape(a2, tiles * c), out=v)
        prod = buf.tiles_out[:a2 * tiles * k].reshape(a2, tiles, k)
        np.matmul(v.reshape(a2, tiles, c), conv.matrix, out=prod)
        y = buf.product[:wino.m * wino.m * tiles * k].reshape(wino.m * wino.m, tiles * k)
        np.matmul(wino.output_transform, prod.reshape(a2, tiles * k), out=y)
        return y.reshape(wino.m, wino.m, n, t, t, k)

    def conv3_activate_into(self, buf, src, conv, dst):
        """dst interior = activation(conv(src) + bias)."""
        self.conv3(buf, src, conv, dst)
        self.activate_(interior(dst))

    # ---- forward
    def forward(self, planes):
        """planes (N, 112, 8, 8) -> policy logits (N, 1858), wdl (N, 3), moves left (N,)."""
        with self._lock:
            return self._forward(planes)

    def _forward(self, planes):
        planes = checked_planes(planes)
        n = planes.shape[0]
        if n == 0:
            return (np.zeros((0, POLICY_SIZE), F32), np.zeros((0, 3), F32), np.zeros(0, F32))
        if n > MAX_CHUNK:  # bounded work memory; no faster per position beyond this
            parts = [self._forward(planes[i:i + MAX_CHUNK]) for i in range(0, n, MAX_CHUNK)]
            return tuple(np.concatenate(outputs) for outputs in zip(*parts))
        buf = self.buffers(n)
        np.copyto(interior(buf.inp), planes.transpose(0, 2, 3, 1))
        self.conv3_activate_into(buf, buf.inp, self.input, buf.x)
        for block in self.residual:
            self.residual_block(buf, block)
        flow = buf.flow
        np.copyto(flow.reshape(n, 8, 8, self.channels), interior(buf.x))
        policy = self.policy_head(buf, flow, n)
        wdl = self.value_head(flow, n)
        moves_left = self.moves_left_head(flow, n) if self.has_moves_left else np.zeros(n, F32)
        return policy, wdl, moves_left

    def residual_block(self, buf, block):
        self.conv3_activate_into(buf, buf.x, block.conv1, buf.h)
        y = self.conv3(buf, buf.h, block.conv2)
        n, c = buf.x.shape[0], self.channels
        y3 = y.reshape(n, SQUARES, c)
        x = interior(buf.x)
        if block.se is not None:
            w1, b1, w2, b2 = block.se
            hidden = y3.sum(axis=1) @ w1  # w1 carries the 1/64 of the average pool
            hidden += b1
            self.activate_(hidden)
            scale = hidden @ w2
            scale += b2
            gamma = sigmoid(scale[:, :c])
            y3 *= gamma[:, None, :]
            y3 += scale[:, None, c:]
        x += y.reshape(x.shape)
        self.activate_(x)

    def policy_head(self, buf, flow, n):
        if self.policy_kind == NF.POLICY_CONVOLUTION:
            self.conv3_activate_into(buf, buf.x, self.policy1, buf.h)
            y = self.conv3(buf, buf.h, self.policy)
            return np.take(y.reshape(n, -1), self.policy_gather, axis=1)
        if self.policy_kind == NF.POLICY_CLASSICAL:
            p = flow @ self.policy.matrix
            p += self.policy.bias
            self.activate_(p)
            logits = p.reshape(n, -1) @ self.policy_ip_w
            logits += self.policy_ip_b
            return logits
        out = self.attention_policy(flow.reshape(n, SQUARES, self.channels))
        return np.ascontiguousarray(out, dtype=F32)

    def value_head(self, flow, n):
        v = flow @ self.value.matrix
        v += self.value.bias
        self.activate_(v)
        hidden = v.reshape(n, -1) @ self.value_ip1_w
        hidden += self.value_ip1_b
        self.activate_(hidden)
        out = hidden @ self.value_ip2_w
        out += self.value_ip2_b
        if not self.wdl:
            return wdl_from_classical(np.tanh(out[:, 0]))
        out -= out.max(axis=1, keepdims=True)
        np.exp(out, out=out)
        out /= out.sum(axis=1, keepdims=True)
        return out

    def moves_left_head(self, flow, n):
        m = flow @ self.moves_left.matrix
        m += self.moves_left.bias
        self.activate_(m)
        hidden = m.reshape(n, -1) @ self.mov_ip1_w
        hidden += self.mov_ip1_b
        self.activate_(hidden)
        out = hidden @ self.mov_ip2_w
        out += self.mov_ip2_b
        return np.maximum(out[:, 0], 0)
