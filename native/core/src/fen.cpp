// fen.cpp - FEN text <-> Position. Strict about syntax; about the position
// it follows lc0-rocm's Python front end (lc0_rocm/uci.py board_from_fen):
// castling rights without their king and rook and an impossible en-passant
// square are dropped, positions that cannot be played are refused with the
// names python-chess gives their problems.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>
#include <vector>

#include "attacks.h"
#include "position.h"
#include "position_checks.h"

namespace lc0core {
namespace {

constexpr size_t kMaxFenLength = 256;
const char kPieceLetters[] = "pnbrqk";

std::string quoted(const std::string& s) { return "'" + s + "'"; }

bool parse_number(const std::string& text, uint64_t limit, uint64_t* out) {
  if (text.empty() || text.size() > 10) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + uint64_t(c - '0');
  }
  if (value > limit) return false;
  *out = value;
  return true;
}

bool parse_placement(const std::string& text, Position* pos, std::string* error) {
  int rank = 7, file = 0;
  bool previous_digit = false;
  for (char c : text) {
    if (c == '/') {
      if (file != 8) {
        *error = "rank " + std::to_string(rank + 1) + " of the piece placement has " + std::to_string(file) +
                 " squares, not 8";
        return false;
      }
      if (--rank < 0) {
        *error = "the piece placement has more than 8 ranks";
        return false;
      }
      file = 0;
      previous_digit = false;
    } else if (c >= '1' && c <= '8') {
      if (previous_digit) {
        *error = "two digits in a row in the piece placement";
        return false;
      }
      file += c - '0';
      previous_digit = true;
      if (file > 8) break;
    } else {
      const char* letter = std::strchr(kPieceLetters, std::tolower(static_cast<unsigned char>(c)));
      if (c == '\0' || letter == nullptr) {
        *error = "invalid character " + quoted(std::string(1, c)) + " in the piece placement";
        return false;
      }
      if (file >= 8) {
        file = 9;
        break;
      }
      const Color colour = std::isupper(static_cast<unsigned char>(c)) ? WHITE : BLACK;
      const int square = rank * 8 + file;
      pos->by_color[colour] |= bit(square);
      pos->by_type[letter - kPieceLetters] |= bit(square);
      ++file;
      previous_digit = false;
    }
  }
  if (file > 8) {
    *error = "rank " + std::to_string(rank + 1) + " of the piece placement has more than 8 squares";
    return false;
  }
  if (rank != 0 || file != 8) {
    *error = rank != 0 ? "the piece placement has " + std::to_string(8 - rank) + " ranks, not 8"
                       : "rank 1 of the piece placement has " + std::to_string(file) + " squares, not 8";
    return false;
  }
  return true;
}

// Castling letters -> rook squares, as python-chess reads them: K/Q the
// outermost rook on that side of the king (or the h/a file when there is
// none), a file letter (Shredder-FEN/X-FEN) the rook on that file.
bool parse_castling(const std::string& text, Position* pos, std::string* error) {
  if (text == "-") return true;
  std::string seen;
  for (char c : text) {
    const bool white = std::isupper(static_cast<unsigned char>(c));
    const char lower = char(std::tolower(static_cast<unsigned char>(c)));
    if (!(lower == 'k' || lower == 'q' || (lower >= 'a' && lower <= 'h')) || seen.find(c) != std::string::npos) {
      *error = "invalid castling field " + quoted(text) + " (expected '-' or letters of KQkq and files A-H, a-h, "
               "each once)";
      return false;
    }
    seen += c;
    const Color colour = white ? WHITE : BLACK;
    const Bitboard rank = back_rank(colour);
    const Bitboard rooks = pos->pieces(colour, ROOK) & rank;
    const Bitboard king = pos->pieces(colour, KING);
    const int king_square = king ? lsb(king) : -1;
    Bitboard chosen;
    if (lower == 'q') {
      chosen = (king && rooks && lsb(rooks) < king_square) ? (rooks & -rooks) : (kFileA & rank);
    } else if (lower == 'k') {
      chosen = (king && rooks && king_square < msb(rooks)) ? bit(msb(rooks)) : (kFileH & rank);
    } else {
      chosen = (kFileA << (lower - 'a')) & rank;
    }
    pos->castling_rooks |= chosen;
  }
  return true;
}

}  // namespace

bool parse_fen(const char* fen, bool chess960, Position* out, std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (fen == nullptr || out == nullptr) {
    *error = "no FEN given";
    return false;
  }
  const size_t length = strnlen(fen, kMaxFenLength + 1);
  if (length > kMaxFenLength) {
    *error = "FEN longer than " + std::to_string(kMaxFenLength) + " characters";
    return false;
  }
  std::vector<std::string> fields;
  std::istringstream stream(std::string(fen, length));
  for (std::string field; stream >> field;) fields.push_back(field);
  if (fields.empty()) {
    *error = "empty FEN";
    return false;
  }
  if (fields.size() > 6) {
    *error = "FEN has " + std::to_string(fields.size()) + " fields, at most 6";
    return false;
  }
  for (const auto& f : fields) {
    for (unsigned char c : f) {
      if (c < 0x21 || c > 0x7E) {
        *error = "FEN holds a character that is not printable ASCII";
        return false;
      }
    }
  }
  fields.resize(6);
  Position pos;
  if (!parse_placement(fields[0], &pos, error)) return false;

  const std::string& side = fields[1].empty() ? "w" : fields[1];
  if (side != "w" && side != "b") {
    *error = "expected 'w' or 'b' for the side to move, got " + quoted(side);
    return false;
  }
  pos.side = side == "w" ? WHITE : BLACK;

  if (!parse_castling(fields[2].empty() ? "-" : fields[2], &pos, error)) return false;

  const std::string& ep = fields[3].empty() ? "-" : fields[3];
  if (ep != "-") {
    if (ep.size() != 2 || ep[0] < 'a' || ep[0] > 'h' || ep[1] < '1' || ep[1] > '8') {
      *error = "invalid en passant field " + quoted(ep) + " (expected '-' or a square such as e3)";
      return false;
    }
    pos.ep_square = int8_t((ep[1] - '1') * 8 + (ep[0] - 'a'));
  }

  uint64_t number = 0;
  if (!fields[4].empty()) {
    if (!parse_number(fields[4], 2147483647, &number)) {
      *error = "invalid half-move clock " + quoted(fields[4]) + " (expected a number 0..2147483647)";
      return false;
    }
    pos.rule50 = uint32_t(number);
  }
  if (!fields[5].empty()) {
    if (!parse_number(fields[5], 1000000000, &number)) {
      *error = "invalid fullmove number " + quoted(fields[5]) + " (expected a number 0..1000000000)";
      return false;
    }
    pos.fullmove = number < 1 ? 1 : uint32_t(number);
  }

  const std::string problems = position_problems(pos);
  if (!problems.empty()) {
    *error = "impossible position: " + problems;
    return false;
  }
  pos.castling_rooks = clean_castling_rights(pos, pos.castling_rooks, chess960);
  if (pos.ep_square >= 0 && !valid_ep_square(pos, pos.ep_square)) pos.ep_square = -1;
  *out = pos;
  return true;
}

std::string to_fen(const Position& pos, bool /*chess960: X-FEN reads the same in both*/) {
  std::string fen;
  for (int rank = 7; rank >= 0; --rank) {
    int empty = 0;
    for (int file = 0; file < 8; ++file) {
      const int square = rank * 8 + file;
      const PieceType t = piece_on(pos, square);
      if (t == NO_PIECE_TYPE) {
        ++empty;
        continue;
      }
      if (empty) fen += char('0' + empty);
      empty = 0;
      const char letter = kPieceLetters[t];
      fen += (pos.by_color[WHITE] & bit(square)) ? char(std::toupper(letter)) : letter;
    }
    if (empty) fen += char('0' + empty);
    if (rank) fen += '/';
  }
  fen += pos.side == WHITE ? " w " : " b ";
  // X-FEN castling (python-chess's castling_xfen): K/Q for the outermost
  // rook on its side of the king, else the rook's file; h side first.
  std::string castling;
  for (Color c : {WHITE, BLACK}) {
    const Bitboard king = pos.pieces(c, KING);
    if (!king) continue;
    const Bitboard rank = back_rank(c);
    Bitboard rights = pos.castling_rooks & rank;
    while (rights) {
      const int rook = msb(rights);
      rights &= ~bit(rook);
      const bool a_side = file_of(rook) < file_of(lsb(king));
      const Bitboard others = pos.pieces(c, ROOK) & rank & ~bit(rook);
      bool outermost = true;
      for (Bitboard o = others; o; ) {
        if ((file_of(pop_lsb(o)) < file_of(rook)) == a_side) outermost = false;
      }
      char letter = outermost ? (a_side ? 'q' : 'k') : char('a' + file_of(rook));
      castling += c == WHITE ? char(std::toupper(letter)) : letter;
    }
  }
  fen += castling.empty() ? "-" : castling;
  if (pos.ep_square >= 0) {
    fen += ' ';
    fen += char('a' + file_of(pos.ep_square));
    fen += char('1' + rank_of(pos.ep_square));
  } else {
    fen += " -";
  }
  fen += " " + std::to_string(pos.rule50) + " " + std::to_string(pos.fullmove);
  return fen;
}

const Position& standard_start() {
  static const Position start = [] {
    Position pos;
    std::string error;
    parse_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", false, &pos, &error);
    return pos;
  }();
  return start;
}

}  // namespace lc0core
