// attacks.cpp - fills the attack tables when the library is loaded.
#include "attacks.h"

#include <vector>

namespace lc0core {
namespace {

constexpr int kRookDirections[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
constexpr int kBishopDirections[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

bool on_board(int file, int rank) { return file >= 0 && file < 8 && rank >= 0 && rank < 8; }

// Attacks of a slider by walking each direction until a piece or the edge.
Bitboard slide(int square, Bitboard occupied, const int (&directions)[4][2]) {
  Bitboard attacks = 0;
  for (const auto& d : directions) {
    int file = file_of(square) + d[0], rank = rank_of(square) + d[1];
    while (on_board(file, rank)) {
      const int s = rank * 8 + file;
      attacks |= bit(s);
      if (occupied & bit(s)) break;
      file += d[0];
      rank += d[1];
    }
  }
  return attacks;
}

Bitboard leaper(int square, const int (*steps)[2], int count) {
  Bitboard attacks = 0;
  for (int i = 0; i < count; ++i) {
    const int file = file_of(square) + steps[i][0], rank = rank_of(square) + steps[i][1];
    if (on_board(file, rank)) attacks |= bit(rank * 8 + file);
  }
  return attacks;
}

// xorshift64*: a fixed seed makes the magic search (and so its timing) the
// same on every load.
struct Random {
  uint64_t state;
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
  }
  uint64_t sparse() { return next() & next() & next(); }
};

// Finds a magic per square by trial: a candidate works when no two
// occupancies that give different attacks land on the same table slot.
void find_magics(Magic (&magics)[64], std::vector<Bitboard>& table, const int (&directions)[4][2]) {
  std::vector<Bitboard> occupancies, references;
  std::vector<int> tried_at;
  Random random{0x9E3779B97F4A7C15ull};
  size_t total = 0;
  size_t offsets[64];
  for (int square = 0; square < 64; ++square) {
    const Bitboard edges = ((kRank1 | kRank8) & ~(kRank1 << (8 * rank_of(square)))) |
                           ((kFileA | kFileH) & ~(kFileA << file_of(square)));
    magics[square].mask = slide(square, 0, directions) & ~edges;
    magics[square].shift = 64 - popcount(magics[square].mask);
    offsets[square] = total;
    total += size_t(1) << popcount(magics[square].mask);
  }
  table.assign(total, 0);
  tried_at.assign(4096, 0);
  int attempt = 0;
  for (int square = 0; square < 64; ++square) {
    Magic& m = magics[square];
    occupancies.clear();
    references.clear();
    Bitboard subset = 0;
    do {  // every subset of the mask (carry-rippler)
      occupancies.push_back(subset);
      references.push_back(slide(square, subset, directions));
      subset = (subset - m.mask) & m.mask;
    } while (subset);
    Bitboard* slots = table.data() + offsets[square];
    for (;;) {
      m.magic = random.sparse();
      if (popcount((m.mask * m.magic) >> 56) < 6) continue;  // too few high bits: hopeless
      ++attempt;
      bool works = true;
      for (size_t i = 0; i < occupancies.size() && works; ++i) {
        const size_t index = (occupancies[i] * m.magic) >> m.shift;
        if (tried_at[index] != attempt) {
          tried_at[index] = attempt;
          slots[index] = references[i];
        } else if (slots[index] != references[i]) {
          works = false;
        }
      }
      if (works) break;
    }
    m.table = slots;
  }
}

struct Tables : AttackTables {
  std::vector<Bitboard> rook_table, bishop_table;
  Tables() {
    static const int knight_steps[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2},
                                           {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    static const int king_steps[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                                         {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    static const int white_pawn_steps[2][2] = {{-1, 1}, {1, 1}};
    static const int black_pawn_steps[2][2] = {{-1, -1}, {1, -1}};
    for (int s = 0; s < 64; ++s) {
      knight[s] = leaper(s, knight_steps, 8);
      king[s] = leaper(s, king_steps, 8);
      pawn[WHITE][s] = leaper(s, white_pawn_steps, 2);
      pawn[BLACK][s] = leaper(s, black_pawn_steps, 2);
    }
    find_magics(rook, rook_table, kRookDirections);
    find_magics(bishop, bishop_table, kBishopDirections);
    for (int a = 0; a < 64; ++a) {
      for (int b = 0; b < 64; ++b) {
        between[a][b] = line[a][b] = 0;
        if (a == b) continue;
        if (slide(a, 0, kRookDirections) & bit(b)) {
          line[a][b] = (slide(a, 0, kRookDirections) & slide(b, 0, kRookDirections)) | bit(a) | bit(b);
          between[a][b] = slide(a, bit(b), kRookDirections) & slide(b, bit(a), kRookDirections);
        } else if (slide(a, 0, kBishopDirections) & bit(b)) {
          line[a][b] = (slide(a, 0, kBishopDirections) & slide(b, 0, kBishopDirections)) | bit(a) | bit(b);
          between[a][b] = slide(a, bit(b), kBishopDirections) & slide(b, bit(a), kBishopDirections);
        }
      }
    }
  }
};

const Tables tables;

}  // namespace

const AttackTables& kAttacks = tables;

}  // namespace lc0core
