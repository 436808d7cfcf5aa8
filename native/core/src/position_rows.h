// position_rows.h - one position as a text row, "FEN" or "FEN moves m1 m2 ..."
// (UCI moves, as the `position` command writes it): parsed into a history
// the encoder and the search read. Shared by the batch analysis entry points
// (api_encode_rows.cpp, search_many.cpp).
// Owner: analysis.
#pragma once
#include <string>
#include "history.h"

namespace lc0core {

// Parses `row` (at most `length` bytes, not NUL-terminated necessarily) into
// *history (standard chess). Returns LC0CORE_OK, or LC0CORE_BAD_FEN /
// LC0CORE_ILLEGAL_MOVE with *error saying why.
int parse_position_row(const char* row, size_t length, PositionHistory* history, std::string* error);

// The row's FEN and its moves text ("" when none), split at " moves ".
void split_position_row(const std::string& row, std::string* fen, std::string* moves);

}  // namespace lc0core
