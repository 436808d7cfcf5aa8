// san.cpp - SAN tokens to moves the way python-chess's Board.parse_san
// matches them (see san.h): castling by name, otherwise every legal move
// that fits the token's piece, origin file and rank, target and promotion,
// which must be exactly one; and moves to SAN as Board.san writes them.
#include "san.h"

#include <string_view>

#include "attacks.h"

namespace lc0core {
namespace {

bool is_file(char c) { return c >= 'a' && c <= 'h'; }
bool is_rank(char c) { return c >= '1' && c <= '8'; }

int piece_of_letter(char c) {       // python-chess's piece letters, either case
  switch (c | 0x20) {
    case 'n': return KNIGHT;
    case 'b': return BISHOP;
    case 'r': return ROOK;
    case 'q': return QUEEN;
    case 'k': return KING;
    default: return -1;
  }
}

// Castling as this representation holds it: the king takes its own rook.
bool castles(const Position& pos, Move m) {
  return (pos.pieces(pos.side, KING) & bit(m.from())) && (pos.pieces(pos.side, ROOK) & bit(m.to()));
}

bool castling_by_name(const Position& pos, const MoveList& legal, bool king_side, Move* out) {
  for (Move m : legal) {
    if (castles(pos, m) && (m.to() > m.from()) == king_side) {
      *out = m;
      return true;
    }
  }
  return false;                      // python-chess: illegal san
}

}  // namespace

bool parse_san(const Position& pos, const char* san, size_t length, Move* out) {
  MoveList legal;
  legal_moves(pos, &legal);
  const std::string_view token(san, length);
  if (token == "O-O" || token == "0-0") return castling_by_name(pos, legal, true, out);
  if (token == "O-O-O" || token == "0-0-0") return castling_by_name(pos, legal, false, out);

  // python-chess's SAN_REGEX, ^([NBKRQ])?([a-h])?([1-8])?[\-x]?([a-h][1-8])(=?[nbrqkNBRQK])?\Z:
  // the target is the last square, a promotion letter (and its '=') may follow.
  size_t end = length;
  int promotion = 0;
  if (end > 0 && piece_of_letter(san[end - 1]) >= 0) {
    promotion = piece_of_letter(san[end - 1]);
    --end;
    if (end > 0 && san[end - 1] == '=') --end;
  }
  if (end < 2 || !is_file(san[end - 2]) || !is_rank(san[end - 1])) return false;
  const int to = (san[end - 1] - '1') * 8 + (san[end - 2] - 'a');
  size_t at = 0;
  int piece = -1;
  if (at < end - 2 && (san[at] == 'N' || san[at] == 'B' || san[at] == 'R' || san[at] == 'Q' || san[at] == 'K')) {
    piece = piece_of_letter(san[at++]);
  }
  int from_file = -1, from_rank = -1;
  if (at < end - 2 && is_file(san[at])) from_file = san[at++] - 'a';
  if (at < end - 2 && is_rank(san[at])) from_rank = san[at++] - '1';
  if (at < end - 2 && (san[at] == '-' || san[at] == 'x')) ++at;
  if (at != end - 2) return false;   // not SAN python-chess reads
  // Without a piece letter: a pawn (python-chess's find_move for a whole
  // origin square gives the same pawn move, and declines the same others).
  if (piece < 0 && from_file < 0) from_file = file_of(to);   // a pawn capture names its file
  const PieceType moving = piece < 0 ? PAWN : PieceType(piece);
  int found = 0;
  for (Move m : legal) {
    // Castling is the king taking its own rook here and in python-chess's
    // move generation, whose target mask leaves out its own pieces: only
    // O-O and O-O-O castle.
    if (castles(pos, m)) continue;
    if (m.to() != to || m.promotion() != promotion) continue;
    if (!(pos.pieces(pos.side, moving) & bit(m.from()))) continue;
    if (from_file >= 0 && file_of(m.from()) != from_file) continue;
    if (from_rank >= 0 && rank_of(m.from()) != from_rank) continue;
    if (++found > 1) return false;   // ambiguous
    *out = m;
  }
  return found == 1;
}

std::string write_san(const Position& pos, Move move) {
  static const char kLetters[] = "PNBRQK";
  std::string san;
  if (castles(pos, move)) {
    san = move.to() > move.from() ? "O-O" : "O-O-O";
  } else {
    const Bitboard from = bit(move.from());
    int piece = PAWN;
    while (piece < KING && !(pos.pieces(pos.side, PieceType(piece)) & from)) ++piece;
    const bool capture = (pos.by_color[pos.side ^ 1] & bit(move.to())) ||
                         (piece == PAWN && file_of(move.from()) != file_of(move.to()));
    if (piece != PAWN) {
      san += kLetters[piece];
      // python-chess: the origins of the other legal moves of this kind to
      // the target; its file unless only a piece on the same file competes,
      // its rank too when one does.
      MoveList legal;
      legal_moves(pos, &legal);
      Bitboard others = 0;
      for (Move m : legal) {
        if (m.to() == move.to() && m.from() != move.from() && !castles(pos, m) &&
            (pos.pieces(pos.side, PieceType(piece)) & bit(m.from()))) {
          others |= bit(m.from());
        }
      }
      if (others) {
        const Bitboard rank = Bitboard(0xFF) << (8 * rank_of(move.from()));
        const Bitboard file = Bitboard(0x0101010101010101ull) << file_of(move.from());
        const bool row = (others & file) != 0;
        const bool column = !row || (others & rank) != 0;
        if (column) san += char('a' + file_of(move.from()));
        if (row) san += char('1' + rank_of(move.from()));
      }
    } else if (capture) {
      san += char('a' + file_of(move.from()));
    }
    if (capture) san += 'x';
    san += char('a' + file_of(move.to()));
    san += char('1' + rank_of(move.to()));
    if (move.promotion()) {
      san += '=';
      san += kLetters[move.promotion()];
    }
  }
  const Position after = apply_move(pos, move);
  if (in_check(after)) {
    MoveList replies;
    legal_moves(after, &replies);
    san += replies.count == 0 ? '#' : '+';
  }
  return san;
}

}  // namespace lc0core
