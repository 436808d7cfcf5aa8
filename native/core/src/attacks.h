// attacks.h - which squares a piece attacks: precomputed tables for the
// leapers (pawn, knight, king) and magic bitboards for the sliders, plus the
// geometry (between, line) that pins and check evasions need. The tables
// are filled when the library is loaded (a static initializer in
// attacks.cpp); magic numbers are searched for then, with a fixed seed, in
// a few milliseconds: nothing is copied from elsewhere and no table is
// checked in.
#pragma once
#include <cstdint>

#include "position.h"

namespace lc0core {

constexpr Bitboard bit(int square) { return Bitboard(1) << square; }
inline int lsb(Bitboard b) { return __builtin_ctzll(b); }
inline int msb(Bitboard b) { return 63 - __builtin_clzll(b); }
inline int popcount(Bitboard b) { return __builtin_popcountll(b); }
inline int pop_lsb(Bitboard& b) {
  const int square = lsb(b);
  b &= b - 1;
  return square;
}
inline int pop_msb(Bitboard& b) {
  const int square = msb(b);
  b ^= bit(square);
  return square;
}
constexpr int file_of(int square) { return square & 7; }
constexpr int rank_of(int square) { return square >> 3; }

constexpr Bitboard kRank1 = 0xFFull;
constexpr Bitboard kRank8 = kRank1 << 56;
constexpr Bitboard kFileA = 0x0101010101010101ull;
constexpr Bitboard kFileH = kFileA << 7;
constexpr Bitboard kLightSquares = 0x55AA55AA55AA55AAull;
constexpr Bitboard kDarkSquares = ~kLightSquares;
constexpr Bitboard back_rank(Color c) { return c == WHITE ? kRank1 : kRank8; }

// A magic bitboard entry: attacks = table[((occupied & mask) * magic) >> shift].
struct Magic {
  Bitboard mask;
  Bitboard magic;
  const Bitboard* table;
  int shift;
  Bitboard attacks(Bitboard occupied) const { return table[((occupied & mask) * magic) >> shift]; }
};

struct AttackTables {
  Bitboard pawn[2][64];     // squares a pawn of colour c on s attacks
  Bitboard knight[64];
  Bitboard king[64];
  Bitboard between[64][64]; // squares strictly between two aligned squares, else 0
  Bitboard line[64][64];    // the whole line through two aligned squares, else 0
  Magic rook[64];
  Magic bishop[64];
};
extern const AttackTables& kAttacks;

inline Bitboard rook_attacks(int square, Bitboard occupied) { return kAttacks.rook[square].attacks(occupied); }
inline Bitboard bishop_attacks(int square, Bitboard occupied) { return kAttacks.bishop[square].attacks(occupied); }
inline Bitboard queen_attacks(int square, Bitboard occupied) {
  return rook_attacks(square, occupied) | bishop_attacks(square, occupied);
}

// Pieces of either colour that attack `square` when `occupied` are the
// occupied squares (pieces outside `occupied` still count as attackers).
inline Bitboard attackers_to(const Position& pos, int square, Bitboard occupied) {
  return (kAttacks.pawn[WHITE][square] & pos.pieces(BLACK, PAWN)) |
         (kAttacks.pawn[BLACK][square] & pos.pieces(WHITE, PAWN)) |
         (kAttacks.knight[square] & pos.by_type[KNIGHT]) |
         (kAttacks.king[square] & pos.by_type[KING]) |
         (bishop_attacks(square, occupied) & (pos.by_type[BISHOP] | pos.by_type[QUEEN])) |
         (rook_attacks(square, occupied) & (pos.by_type[ROOK] | pos.by_type[QUEEN]));
}

// The piece type on `square`, NO_PIECE_TYPE when empty.
inline PieceType piece_on(const Position& pos, int square) {
  const Bitboard b = bit(square);
  if (!(pos.occupied() & b)) return NO_PIECE_TYPE;
  for (int t = PAWN; t < KING; ++t) {
    if (pos.by_type[t] & b) return PieceType(t);
  }
  return KING;
}

}  // namespace lc0core
