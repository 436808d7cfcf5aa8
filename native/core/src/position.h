// position.h - one chess position as bitboards, its legal moves and copy-make.
// Owner: rules (position.cpp, movegen.cpp, fen.cpp, attacks.*). Contract for
// the encoder and the search: this struct and these functions.
#pragma once
#include <cstdint>
#include <string>

namespace lc0core {

using Bitboard = uint64_t;               // bit i = square i, a1 = 0, h1 = 7, a8 = 56
enum Color : uint8_t { WHITE = 0, BLACK = 1 };
enum PieceType : uint8_t { PAWN = 0, KNIGHT, BISHOP, ROOK, QUEEN, KING, NO_PIECE_TYPE };

// 16 bits: from | to << 6 | promotion << 12, promotion 0 none, else a
// PieceType (KNIGHT..QUEEN). Castling is held as king-takes-own-rook
// (from = king square, to = castling rook square) in standard chess and in
// Chess960 alike, as lc0 and python-chess's 960 mode hold it; UCI text
// turns it into e1g1 unless the game is Chess960.
struct Move {
  uint16_t raw = 0;
  constexpr Move() = default;
  constexpr Move(int from, int to, int promotion = 0)
      : raw(uint16_t(from | (to << 6) | (promotion << 12))) {}
  static constexpr Move from_raw(uint16_t bits) {   // a move as the tree stores it
    Move m;
    m.raw = bits;
    return m;
  }
  constexpr int from() const { return raw & 63; }
  constexpr int to() const { return (raw >> 6) & 63; }
  constexpr int promotion() const { return raw >> 12; }
  constexpr bool operator==(Move o) const { return raw == o.raw; }
  constexpr bool operator!=(Move o) const { return raw != o.raw; }
};

constexpr int kMaxMoves = 256;           // more than any legal position has
struct MoveList {
  Move moves[kMaxMoves];
  int count = 0;
  const Move* begin() const { return moves; }
  const Move* end() const { return moves + count; }
};

// A position as lc0 sees it. Plain data: copy it to keep it.
struct Position {
  Bitboard by_color[2] = {0, 0};         // WHITE, BLACK
  Bitboard by_type[6] = {0, 0, 0, 0, 0, 0};  // PAWN..KING, both colours
  Bitboard castling_rooks = 0;           // rooks that still carry a castling right (python-chess's clean_castling_rights())
  int8_t ep_square = -1;                 // lc0's e.p. flag: the square behind a pawn that just moved two,
                                         // set only if a pawn of the side to move stands beside it
                                         // (pseudo-legal, as lc0); a FEN's e.p. square is kept as written
  Color side = WHITE;                    // side to move
  uint32_t rule50 = 0;                   // plies since the last capture or pawn move (FENs may say up to 2^31 - 1)
  uint32_t fullmove = 1;

  Bitboard pieces(Color c, PieceType t) const { return by_color[c] & by_type[t]; }
  Bitboard occupied() const { return by_color[WHITE] | by_color[BLACK]; }
  bool operator==(const Position& o) const;   // lc0's repetition equality: pieces, side, castling, ep
};

// FEN -> position. Returns false and sets *error on any malformed or
// impossible input (never throws, never reads past the string's end).
// Castling letters may be KQkq or files (Shredder/X-FEN) in both modes;
// chess960 decides which rights stay (python-chess's clean_castling_rights).
bool parse_fen(const char* fen, bool chess960, Position* out, std::string* error);
// The standard starting position (lc0 encodes a game from it differently).
const Position& standard_start();
std::string to_fen(const Position& pos, bool chess960);

void legal_moves(const Position& pos, MoveList* out);
bool in_check(const Position& pos);
// The position after a legal move (copy-make); rule50, castling rights and
// lc0's e.p. flag updated as lc0 does.
Position apply_move(const Position& pos, Move move);
// UCI text <-> move; parse_uci accepts e1g1 and e1h1 for castling in
// standard chess, only king-takes-rook in chess960. Returns false if the
// text is not a legal move of `pos`.
bool parse_uci(const Position& pos, const char* text, bool chess960, Move* out);
std::string to_uci(const Position& pos, Move move, bool chess960);
// lc0's view: is there mating material left for either side (KvK, KBvK,
// KNvK, KB..vKB.. with bishops all on one colour are not)?
bool has_mating_material(const Position& pos);
// Zobrist-style 64-bit hash of what repetition equality compares.
uint64_t position_hash(const Position& pos);

uint64_t perft(const Position& pos, int depth);

}  // namespace lc0core
