"""A game's PGN text exactly as python-chess's StringExporter writes it
(headers, comments, NAGs, the result, 80 columns), without python-chess
replaying the game on a board to write each move's SAN (~100 us a move,
most of writing an annotated PGN): for a game without variations the
exporter is driven along the mainline, each move's SAN from the native
core (`lc0core_uci_sans`, python-chess's Board.san rules). A game with
variations, from a variant or Chess960 start, or with the core not built
is exported by python-chess itself.
"""
from __future__ import annotations

import chess
import chess.pgn

from lc0_rocm.analysis import inputs


class Ply:
    """What StringExporter.visit_move reads of the board before a move:
    whose turn it is, the move number and the move's SAN."""

    __slots__ = ("turn", "fullmove_number", "_san")

    def __init__(self, turn: bool, fullmove_number: int, san: str):
        self.turn, self.fullmove_number, self._san = turn, fullmove_number, san

    def san(self, move: chess.Move) -> str:
        return self._san


def uci_sans(fen: str, ucis: list[str]) -> list[str] | None:
    """UCI moves played from `fen` (standard chess) as python-chess's
    Board.san writes them, through the native core; None when a move is
    not legal there or the core is not built."""
    return inputs.core_line("lc0core_uci_sans", fen, ucis, 9)   # Qa1xb2+ or exd8=Q# and a space


def fen_move_sans(pairs: list[tuple[str, str]]) -> list[str | None] | None:
    """Each (FEN, UCI move) pair's move as python-chess's Board.san writes
    it (None where the move is not legal there), all in one native call;
    None when the core is not built."""
    from lc0_rocm import native_core
    if not native_core.available()[0]:
        return None
    if not pairs:
        return []
    ffi, lib = native_core.load()
    text = b"".join(f"{fen}\0{move}\0".encode() for fen, move in pairs)
    size = 8 * len(pairs)
    out = ffi.new("char[]", size)
    if lib.lc0core_fen_move_sans(len(pairs), text, len(text), out, size) != 0:
        return None
    return [san.decode() or None for san in ffi.buffer(out, size)[:].split(b"\0")[:len(pairs)]]


def export(game: chess.pgn.Game) -> str:
    """str(game) with headers, comments and variations, as
    `game.accept(chess.pgn.StringExporter(headers=True, variations=True,
    comments=True))` writes it."""
    exporter = chess.pgn.StringExporter(headers=True, variations=True, comments=True)
    nodes = []
    node: chess.pgn.GameNode = game
    while node.variations:
        if len(node.variations) > 1:
            return game.accept(exporter)
        node = node.variations[0]
        nodes.append(node)
    fen = inputs.start_fen(game)
    sans = uci_sans(fen, [n.move.uci() for n in nodes]) if fen is not None else None
    if sans is None:
        return game.accept(exporter)
    moves = ((node.starting_comment, san, node.nags, node.comment) for node, san in zip(nodes, sans))
    return export_mainline(game.headers, game.comment, fen, moves)


def export_mainline(headers: chess.pgn.Headers, comment: str, fen: str, moves) -> str:
    """StringExporter's text for a game without variations from `fen`
    (standard chess): `moves` gives each move's (starting comment, SAN,
    NAGs or None, comment), in Game.accept's order."""
    exporter = chess.pgn.StringExporter(headers=True, variations=True, comments=True)
    exporter.begin_game()
    for tagname, tagvalue in headers.items():
        exporter.visit_header(tagname, tagvalue)
    exporter.end_headers()
    if comment:
        exporter.visit_comment(comment)
    fields = fen.split(" ")
    turn, number = fields[1] == "w", int(fields[5])
    for starting, san, nags, after in moves:
        if starting:
            exporter.visit_comment(starting)
        exporter.visit_move(Ply(turn, number, san), None)
        if nags:
            for nag in sorted(nags):
                exporter.visit_nag(nag)
        if after:
            exporter.visit_comment(after)
        number += not turn
        turn = not turn
    exporter.visit_result(headers.get("Result", "*"))
    exporter.end_game()
    return exporter.result()
