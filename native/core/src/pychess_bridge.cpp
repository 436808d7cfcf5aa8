// pychess_bridge.cpp - see pychess_bridge.h. The python-chess facts here
// (clean_castling_rights, _to_chess960 / _from_chess960, the generation
// order of generate_legal_moves) are read off python-chess 1.11.
#include "pychess_bridge.h"

#include <algorithm>

namespace lc0core {
namespace {

constexpr uint64_t kRank1 = 0xFFULL, kRank8 = 0xFFULL << 56;
constexpr uint64_t kFileA = 0x0101010101010101ULL, kFileH = kFileA << 7;
constexpr int kA1 = 0, kC1 = 2, kE1 = 4, kG1 = 6, kH1 = 7;
constexpr int kA8 = 56, kC8 = 58, kE8 = 60, kG8 = 62, kH8 = 63;

uint64_t bit(int square) { return uint64_t(1) << square; }
int msb(uint64_t bb) { return 63 - __builtin_clzll(bb); }

// The squares from which a pawn of `color` attacks `square`.
uint64_t pawn_attackers_of(int square, Color color) {
  const uint64_t target = bit(square);
  if (color == WHITE) return ((target >> 7) & ~kFileA) | ((target >> 9) & ~kFileH);
  return ((target << 7) & ~kFileH) | ((target << 9) & ~kFileA);
}

// python-chess's clean_castling_rights() for a board without a move stack.
uint64_t clean_castling_rights(uint64_t rights, const Position& pos, bool chess960) {
  const uint64_t castling = rights & pos.by_type[ROOK];
  uint64_t white = castling & kRank1 & pos.by_color[WHITE];
  uint64_t black = castling & kRank8 & pos.by_color[BLACK];
  const uint64_t white_king = pos.pieces(WHITE, KING), black_king = pos.pieces(BLACK, KING);
  if (!chess960) {
    white &= bit(kA1) | bit(kH1);
    black &= bit(kA8) | bit(kH8);
    if (!(white_king & bit(kE1))) white = 0;
    if (!(black_king & bit(kE8))) black = 0;
    return white | black;
  }
  // Chess960: the king on the back rank, at most one rook each side of it.
  auto sides = [](uint64_t rooks, uint64_t king_mask) -> uint64_t {
    if (!king_mask || !rooks) return 0;
    uint64_t a_side = rooks & (~rooks + 1);
    uint64_t h_side = bit(msb(rooks));
    if (a_side && msb(a_side) > msb(king_mask)) a_side = 0;
    if (h_side && msb(h_side) < msb(king_mask)) h_side = 0;
    return a_side | h_side;
  };
  return sides(white, white_king & kRank1) | sides(black, black_king & kRank8);
}

// python-chess's _to_chess960: the king's two-square move from e1/e8 to
// g or c (no rook there) means castling, king takes rook.
int king_takes_rook_target(const Position& pos, int from, int to) {
  const uint64_t kings = pos.by_type[KING], rooks = pos.by_type[ROOK];
  if (from == kE1 && (kings & bit(kE1))) {
    if (to == kG1 && !(rooks & bit(kG1))) return kH1;
    if (to == kC1 && !(rooks & bit(kC1))) return kA1;
  } else if (from == kE8 && (kings & bit(kE8))) {
    if (to == kG8 && !(rooks & bit(kG8))) return kH8;
    if (to == kC8 && !(rooks & bit(kC8))) return kA8;
  }
  return to;
}

int piece_type_at(const Position& pos, int square) {
  for (int t = PAWN; t <= KING; ++t) {
    if (pos.by_type[t] & bit(square)) return t;
  }
  return NO_PIECE_TYPE;
}

bool is_castling(const Position& pos, Move move) {
  return (pos.pieces(pos.side, KING) & bit(move.from())) &&
         (pos.pieces(pos.side, ROOK) & bit(move.to()));
}

// python-chess promotion order within one from-to pair: q, r, b, n.
int promotion_rank(int promotion) {
  switch (promotion) {
    case QUEEN: return 0;
    case ROOK: return 1;
    case BISHOP: return 2;
    case KNIGHT: return 3;
    default: return 0;
  }
}

// Sort key reproducing generate_legal_moves: when in check, king steps
// first (to-square descending); then piece moves (from, to descending),
// castling (rook descending), pawn captures (from, to descending, q r b n),
// single pushes, double pushes (to descending), e.p. captures last.
uint32_t order_key(const Position& pos, Move move, bool check) {
  const int from = move.from(), to = move.to();
  const int type = piece_type_at(pos, from);
  int group, a = 0, b = 0;
  if (type == KING && is_castling(pos, move)) {
    group = 2;
    a = to;
  } else if (type != PAWN) {
    if (check && type == KING) {
      group = 0;
      a = to;
    } else {
      group = 1;
      a = from;
      b = to;
    }
  } else if ((from & 7) != (to & 7)) {
    const bool en_passant = !(pos.occupied() & bit(to));
    group = en_passant ? 6 : 3;
    a = from;
    b = to;
  } else {
    group = (to - from == 16 || from - to == 16) ? 5 : 4;
    a = to;
  }
  return uint32_t(group) << 20 | uint32_t(63 - a) << 12 | uint32_t(63 - b) << 4 |
         uint32_t(promotion_rank(move.promotion()));
}

}  // namespace

bool position_from_python_chess(const PythonChessPosition& in, Position* out, std::string* error) {
  const uint64_t* bb = in.bitboards;
  const int32_t* info = in.info;
  Position pos;
  for (int t = PAWN; t <= KING; ++t) pos.by_type[t] = bb[t];
  pos.by_color[WHITE] = bb[6];
  pos.by_color[BLACK] = bb[7];
  pos.side = info[kPyInfoWhiteToMove] ? WHITE : BLACK;
  const int32_t halfmove = info[kPyInfoHalfmove], fullmove = info[kPyInfoFullmove];
  const int32_t ep = info[kPyInfoEpSquare];
  if (halfmove < 0 || halfmove > 0xFFFF || fullmove < 1 || ep < -1 || ep > 63) {
    *error = "halfmove clock, fullmove number or e.p. square out of range";
    return false;
  }
  pos.rule50 = uint16_t(halfmove);
  pos.fullmove = uint32_t(fullmove);
  const bool chess960 = info[kPyInfoChess960] != 0;
  pos.castling_rooks = clean_castling_rights(bb[8], pos, chess960);
  if (ep >= 0 && (info[kPyInfoGameStart] ||
                  (pawn_attackers_of(ep, pos.side) & pos.pieces(pos.side, PAWN)))) {
    pos.ep_square = int8_t(ep);
  }
  // The FEN parser is the core's judge of a possible position; the round
  // trip must give back the same position.
  Position parsed;
  if (!parse_fen(to_fen(pos, chess960).c_str(), chess960, &parsed, error)) return false;
  if (!(parsed == pos) || parsed.rule50 != pos.rule50 || parsed.occupied() != pos.occupied()) {
    *error = "position does not survive the FEN round trip";
    return false;
  }
  *out = parsed;
  return true;
}

bool move_from_python_chess(const Position& pos, uint16_t raw, MoveList* scratch, Move* out) {
  const int from = raw & 63, promotion = raw >> 12;
  if (promotion != 0 && (promotion < 2 || promotion > 5)) return false;
  const int to = king_takes_rook_target(pos, from, (raw >> 6) & 63);
  // python-chess's piece types are ours + 1 (knight 2 .. queen 5).
  const Move wanted(from, to, promotion ? promotion - 1 : 0);
  legal_moves(pos, scratch);
  for (Move m : *scratch) {
    if (m == wanted) {
      *out = m;
      return true;
    }
  }
  return false;
}

uint16_t move_to_python_chess(const Position& pos, Move move, bool chess960) {
  int to = move.to();
  if (!chess960 && is_castling(pos, move)) {
    // Outside Chess960 python-chess names castling by the king's two squares.
    to = (move.from() & 56) + ((to & 7) > (move.from() & 7) ? 6 : 2);
  }
  const int promotion = move.promotion() ? move.promotion() + 1 : 0;
  return uint16_t(move.from() | to << 6 | promotion << 12);
}

void order_like_python_chess(const Position& pos, MoveList* moves) {
  const bool check = in_check(pos);
  uint64_t keyed[kMaxMoves];
  for (int i = 0; i < moves->count; ++i) {
    keyed[i] = uint64_t(order_key(pos, moves->moves[i], check)) << 16 | moves->moves[i].raw;
  }
  std::sort(keyed, keyed + moves->count);
  for (int i = 0; i < moves->count; ++i) moves->moves[i].raw = uint16_t(keyed[i] & 0xFFFF);
}

}  // namespace lc0core
