// position.cpp - copy-make, UCI move text, equality and hashing, mating
// material.
#include <cstring>

#include "attacks.h"
#include "position.h"

namespace lc0core {
namespace {

// Zobrist keys, from a fixed splitmix64 stream.
struct ZobristKeys {
  uint64_t piece[2][6][64];
  uint64_t castling[64];
  uint64_t ep[64];
  uint64_t black_to_move;
  ZobristKeys() {
    uint64_t state = 0x6C62272E07BB0142ull;
    auto next = [&state] {
      uint64_t z = (state += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return z ^ (z >> 31);
    };
    for (auto& colour : piece)
      for (auto& type : colour)
        for (auto& key : type) key = next();
    for (auto& key : castling) key = next();
    for (auto& key : ep) key = next();
    black_to_move = next();
  }
};
const ZobristKeys zobrist;

bool is_castling(const Position& pos, Move move) {
  return (pos.pieces(pos.side, KING) & bit(move.from())) && (pos.pieces(pos.side, ROOK) & bit(move.to()));
}

void put(Position& p, Color c, PieceType t, int square) {
  p.by_color[c] |= bit(square);
  p.by_type[t] |= bit(square);
}

}  // namespace

bool Position::operator==(const Position& o) const {
  return std::memcmp(by_color, o.by_color, sizeof(by_color)) == 0 &&
         std::memcmp(by_type, o.by_type, sizeof(by_type)) == 0 && castling_rooks == o.castling_rooks &&
         ep_square == o.ep_square && side == o.side;
}

uint64_t position_hash(const Position& pos) {
  uint64_t h = pos.side == BLACK ? zobrist.black_to_move : 0;
  for (int c = WHITE; c <= BLACK; ++c) {
    for (int t = PAWN; t <= KING; ++t) {
      Bitboard b = pos.pieces(Color(c), PieceType(t));
      while (b) h ^= zobrist.piece[c][t][pop_lsb(b)];
    }
  }
  Bitboard rooks = pos.castling_rooks;
  while (rooks) h ^= zobrist.castling[pop_lsb(rooks)];
  if (pos.ep_square >= 0) h ^= zobrist.ep[pos.ep_square];
  return h;
}

Position apply_move(const Position& pos, Move move) {
  Position next = pos;
  const Color us = pos.side, them = Color(us ^ 1);
  const int from = move.from(), to = move.to();
  next.side = them;
  next.ep_square = -1;
  next.rule50 = pos.rule50 + (pos.rule50 < 0xFFFFFFFFu);   // a FEN's huge count never wraps to 0
  if (us == BLACK) ++next.fullmove;

  if (is_castling(pos, move)) {
    const int rank = rank_of(from) << 3;
    const bool king_side = to > from;
    next.by_color[us] &= ~(bit(from) | bit(to));
    next.by_type[KING] &= ~bit(from);
    next.by_type[ROOK] &= ~bit(to);
    put(next, us, KING, rank + (king_side ? 6 : 2));
    put(next, us, ROOK, rank + (king_side ? 5 : 3));
    next.castling_rooks &= ~back_rank(us);
    return next;
  }

  const PieceType moving = piece_on(pos, from);
  const PieceType captured = piece_on(pos, to);
  if (captured != NO_PIECE_TYPE) {
    next.by_color[them] &= ~bit(to);
    next.by_type[captured] &= ~bit(to);
    next.rule50 = 0;
  }
  next.by_color[us] ^= bit(from) | bit(to);
  next.by_type[moving] &= ~bit(from);
  next.by_type[move.promotion() ? move.promotion() : moving] |= bit(to);

  if (moving == PAWN) {
    next.rule50 = 0;
    const int forward = us == WHITE ? 8 : -8;
    if (captured == NO_PIECE_TYPE && file_of(from) != file_of(to)) {  // en passant
      next.by_color[them] &= ~bit(to - forward);
      next.by_type[PAWN] &= ~bit(to - forward);
    } else if (to - from == 2 * forward) {
      // lc0's flag: only when an enemy pawn stands beside the pawn (pseudo-legal).
      const int behind = from + forward;
      if (kAttacks.pawn[us][behind] & next.pieces(them, PAWN)) next.ep_square = int8_t(behind);
    }
  } else if (moving == KING) {
    next.castling_rooks &= ~back_rank(us);
  }
  next.castling_rooks &= ~(bit(from) | bit(to));  // a rook moved or was taken
  return next;
}

bool parse_uci(const Position& pos, const char* text, bool chess960, Move* out) {
  if (text == nullptr) return false;
  const size_t length = strnlen(text, 6);
  if (length != 4 && length != 5) return false;
  auto square = [](const char* s) {
    return (s[0] >= 'a' && s[0] <= 'h' && s[1] >= '1' && s[1] <= '8') ? (s[1] - '1') * 8 + (s[0] - 'a') : -1;
  };
  const int from = square(text), to = square(text + 2);
  if (from < 0 || to < 0) return false;
  int promotion = 0;
  if (length == 5) {
    const char* letters = "nbrq";
    const char* p = std::strchr(letters, text[4]);
    if (text[4] == '\0' || p == nullptr) return false;
    promotion = KNIGHT + int(p - letters);
  }
  MoveList moves;
  legal_moves(pos, &moves);
  for (Move m : moves) {
    if (m.from() != from || m.promotion() != promotion) continue;
    if (m.to() == to) {
      *out = m;
      return true;
    }
    // Standard chess also names castling by the king's destination (e1g1).
    if (!chess960 && is_castling(pos, m)) {
      const int king_to = (rank_of(from) << 3) + (m.to() > from ? 6 : 2);
      if (king_to == to) {
        *out = m;
        return true;
      }
    }
  }
  return false;
}

std::string to_uci(const Position& pos, Move move, bool chess960) {
  int to = move.to();
  if (!chess960 && is_castling(pos, move)) to = (rank_of(move.from()) << 3) + (to > move.from() ? 6 : 2);
  std::string text = {char('a' + file_of(move.from())), char('1' + rank_of(move.from())),
                      char('a' + file_of(to)), char('1' + rank_of(to))};
  if (move.promotion()) text += "nbrq"[move.promotion() - KNIGHT];
  return text;
}

bool has_mating_material(const Position& pos) {
  if (pos.by_type[PAWN] | pos.by_type[ROOK] | pos.by_type[QUEEN]) return true;
  if (popcount(pos.occupied()) < 4) return false;
  if (pos.by_type[KNIGHT]) return true;
  return (pos.by_type[BISHOP] & kLightSquares) && (pos.by_type[BISHOP] & kDarkSquares);
}

}  // namespace lc0core
