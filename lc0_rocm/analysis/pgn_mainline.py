"""A PGN game held as its mainline's columns (headers, the game's comment,
each move's UCI, SAN, NAGs and comment) instead of python-chess's tree of
nodes, for the annotated PGN: python-chess's reader cuts the game into
tokens (inputs.MainlineTokens), the native core plays the SAN tokens and
writes each move's SAN in two calls a game, and the text is python-chess's
StringExporter's, driven along the columns (building a node a move and
parsing each token through the core one call at a time were ~60 % of
writing an annotated PGN).

Only a plain game takes this way: standard chess, no variation, no error,
every token one the core is sure of (as planning reads it). Any other is
read again by python-chess whole (pgn_out), so the text is the same.
"""
from __future__ import annotations

import itertools

import chess
import chess.pgn

from lc0_rocm.analysis import pgn_export
from lc0_rocm.analysis.inputs import MainlineTokens


class Mainline:
    """A game's mainline as columns: `comments[i]` and `nags[i]` (None or
    a set) belong to the i-th move, as python-chess's GameBuilder gives
    them to the node after that move."""

    __slots__ = ("headers", "comment", "fen", "sans", "comments", "nags")

    def __init__(self, headers: chess.pgn.Headers, comment: str, fen: str, sans: list[str],
                 comments: list[str], nags: list[set[int] | None]):
        self.headers, self.comment, self.fen = headers, comment, fen
        self.sans, self.comments, self.nags = sans, comments, nags

    def export(self) -> str:
        """The text python-chess's StringExporter(headers=True,
        variations=True, comments=True) writes for this game."""
        moves = zip(itertools.repeat(""), self.sans, self.nags, self.comments)
        return pgn_export.export_mainline(self.headers, self.comment, self.fen, moves)


class MainlineReader(MainlineTokens):
    """python-chess's reader visiting a game as its GameBuilder would for a
    game without variations: headers, the comments before the first move
    (the game's comment), each move's NAGs and comments; a variation makes
    the game one python-chess must read whole (`plain` false)."""

    def begin_game(self) -> None:
        super().begin_game()
        self.headers = chess.pgn.Headers()   # Game()'s: the seven tags' defaults
        self.comment = ""
        self.comments: list[str] = []
        self.nags: list[set[int] | None] = []

    def begin_headers(self) -> chess.pgn.Headers:
        return self.headers

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        super().visit_header(tagname, tagvalue)
        self.headers[tagname] = tagvalue

    def visit_comment(self, comment: str) -> None:
        # GameBuilder: before the first move the game's comment, then the
        # last move's (a comment only starts a move after a variation).
        if self.comments:
            self.comments[-1] = " ".join(filter(None, [self.comments[-1], comment]))
        else:
            self.comment = " ".join(filter(None, [self.comment, comment]))

    def visit_nag(self, nag: int) -> None:
        if self.nags:                        # before the first move: the game's, never written
            if self.nags[-1] is None:
                self.nags[-1] = set()
            self.nags[-1].add(nag)

    def visit_result(self, result: str) -> None:
        super().visit_result(result)
        if self.headers.get("Result", "*") == "*":
            self.headers["Result"] = result

    def begin_variation(self):
        self.plain = False
        return chess.pgn.SKIP

    def begin_parse_san(self, board: chess.Board, san: str):
        self.comments.append("")
        self.nags.append(None)
        return super().begin_parse_san(board, san)

    def mainline(self) -> Mainline | None:
        """The game as columns, or None: python-chess must read it whole."""
        moves = self.moves()
        if moves is None:
            return None
        fen, ucis = moves
        sans = pgn_export.uci_sans(fen, ucis)
        if sans is None:
            return None
        return Mainline(self.headers, self.comment, fen, sans, self.comments, self.nags)


def read_mainline(handle) -> MainlineReader | None:
    """The next game of a PGN text handle as MainlineReader visits it (its
    `mainline()`: the game as columns, or None where python-chess must read
    its text, the lines just read, whole); None at the end of the text.
    python-chess's reader's errors propagate."""
    return chess.pgn.read_game(handle, Visitor=MainlineReader)
