// position_rows.cpp - "FEN moves m1 m2 ..." rows -> histories (position_rows.h).
#include "position_rows.h"

#include <cstring>
#include "../include/lc0core_base.h"

namespace lc0core {
namespace {

constexpr const char kMovesWord[] = " moves ";

}  // namespace

void split_position_row(const std::string& row, std::string* fen, std::string* moves) {
  const size_t at = row.find(kMovesWord);
  if (at == std::string::npos) {
    *fen = row;
    moves->clear();
  } else {
    *fen = row.substr(0, at);
    *moves = row.substr(at + sizeof(kMovesWord) - 1);
  }
}

int parse_position_row(const char* row, size_t length, PositionHistory* history, std::string* error) {
  const size_t end = row ? strnlen(row, length) : 0;
  std::string fen, moves;
  split_position_row(std::string(row ? row : "", end), &fen, &moves);
  Position first;
  if (!parse_fen(fen.c_str(), false, &first, error)) return LC0CORE_BAD_FEN;
  // As the search's set_position decides it (lc0's fill rule for missing history).
  history->reset(first, first == standard_start());
  const char* p = moves.c_str();
  while (*p) {
    while (*p == ' ' || *p == '\t') ++p;
    if (!*p) break;
    const char* word = p;
    while (*p && *p != ' ' && *p != '\t') ++p;
    const std::string text(word, size_t(p - word));
    Move move;
    if (text.size() > 5 || !parse_uci(history->last(), text.c_str(), false, &move)) {
      *error = "illegal move " + text.substr(0, 16) + " in the row's moves";
      return LC0CORE_ILLEGAL_MOVE;
    }
    history->push(move);
  }
  return LC0CORE_OK;
}

}  // namespace lc0core
