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

// Fills one square's table slots for `magic`; false when two occupancies
// with different attacks land on the same slot (the magic does not work).
bool try_magic(const Magic& m, const std::vector<Bitboard>& occupancies, const std::vector<Bitboard>& references,
               Bitboard* slots, std::vector<int>& filled_at, int attempt) {
  for (size_t i = 0; i < occupancies.size(); ++i) {
    const size_t index = (occupancies[i] * m.magic) >> m.shift;
    if (filled_at[index] != attempt) {
      filled_at[index] = attempt;
      slots[index] = references[i];
    } else if (slots[index] != references[i]) {
      return false;
    }
  }
  return true;
}

// Sets up the magic of every square: the stored one from magics.inc when it
// works (always, unless the masks change), else one found by trial with
// sparse random numbers (a few hundred milliseconds for all squares).
void init_magics(Magic (&magics)[64], std::vector<Bitboard>& table, const int (&directions)[4][2],
                 const Bitboard* stored) {
  std::vector<Bitboard> occupancies, references;
  std::vector<int> filled_at(4096, 0);
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
    m.table = slots;
    m.magic = stored ? stored[square] : 0;
    if (m.magic && try_magic(m, occupancies, references, slots, filled_at, ++attempt)) continue;
    do {
      do m.magic = random.sparse();
      while (popcount((m.mask * m.magic) >> 56) < 6);  // too few high bits: hopeless
    } while (!try_magic(m, occupancies, references, slots, filled_at, ++attempt));
  }
}

// Magic numbers found by init_magics' search, stored so that loading the
// library does not search (regenerate: see the end of this file).
const Bitboard kStoredRookMagics[64] = {
#include "magics_rook.inc"
};
const Bitboard kStoredBishopMagics[64] = {
#include "magics_bishop.inc"
};

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
    init_magics(rook, rook_table, kRookDirections, kStoredRookMagics);
    init_magics(bishop, bishop_table, kBishopDirections, kStoredBishopMagics);
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

#ifdef LC0CORE_PRINT_MAGICS
// Prints freshly searched magics in magics_*.inc's form:
//   g++ -std=c++17 -O2 -DLC0CORE_PRINT_MAGICS native/core/src/attacks.cpp -o /tmp/magics
//   /tmp/magics rook > native/core/src/magics_rook.inc   (and bishop)
#include <cstdio>
#include <cstring>
int main(int argc, char** argv) {
  using namespace lc0core;
  const bool rook = argc > 1 && std::strcmp(argv[1], "rook") == 0;
  Magic magics[64];
  std::vector<Bitboard> table;
  init_magics(magics, table, rook ? kRookDirections : kBishopDirections, nullptr);
  for (int square = 0; square < 64; ++square) {
    std::printf("0x%016llxull,%s", static_cast<unsigned long long>(magics[square].magic),
                square % 4 == 3 ? "\n" : " ");
  }
}
#endif
