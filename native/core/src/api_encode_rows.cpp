// api_encode_rows.cpp - the C ABI of include/lc0core_encode_rows.h: text rows
// -> packed planes, legal moves and policy indices; logits -> the top moves.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "../include/lc0core_encode_rows.h"
#include "attacks.h"
#include "encoder.h"
#include "errors.h"
#include "host.h"
#include "policy_table.h"
#include "position_rows.h"
#include "pychess_bridge.h"
#include "san.h"
#include "search/task_pool.h"

namespace lc0core {
namespace {

constexpr int kMaxBatch = 1 << 20;
constexpr size_t kMaxRow = 1 << 20;

// The process's pool for row work, made on first use with threads > 1.
search::TaskPool& row_pool() {
  static search::TaskPool pool(std::min(64, usable_cores()) - 1);
  return pool;
}

// Runs body(first, end) over [0, n) in `threads` parts (this thread runs one).
void in_parts(int n, int threads, const std::function<void(int, int)>& body) {
  threads = std::max(1, std::min(threads, n / 64 + 1));
  if (threads == 1) return body(0, n);
  const int size = (n + threads - 1) / threads;
  search::TaskPool::Group group(&row_pool());
  for (int first = size; first < n; first += size) {
    const int end = std::min(n, first + size);
    group.run([&body, first, end] { body(first, end); });
  }
  body(0, std::min(size, n));
}

// Where each row starts, checking every row ends within `length`.
std::vector<size_t> row_starts(int n, const char* rows, size_t length) {
  std::vector<size_t> starts(size_t(n) + 1);
  size_t at = 0;
  for (int i = 0; i < n; ++i) {
    const void* end = at < length ? std::memchr(rows + at, '\0', std::min(length - at, kMaxRow + 1)) : nullptr;
    if (!end) {
      throw Error(LC0CORE_INVALID_ARGUMENT,
                  "row " + std::to_string(i) + " is not NUL-terminated within `length` (or longer than 1 MB)");
    }
    starts[size_t(i)] = at;
    at = size_t(static_cast<const char*>(end) - rows) + 1;
  }
  starts[size_t(n)] = at;
  return starts;
}

void check_count(int n) {
  if (n < 0 || n > kMaxBatch) throw Error(LC0CORE_INVALID_ARGUMENT, "batch size " + std::to_string(n) + " out of range");
}

// One row: planes, legal moves with indices, flags; a status.
int encode_row(const char* row, size_t size, int input_format, uint64_t* masks, float* values,
               int32_t* transform, uint16_t* moves, int16_t* indices, int32_t* count, int32_t* flags) {
  PositionHistory history;
  std::string error;
  const int status = parse_position_row(row, size + 1, &history, &error);
  *count = 0, *flags = 0, *transform = 0;
  if (status != LC0CORE_OK) {
    std::fill(masks, masks + kNumPlanes, 0);
    std::fill(values, values + kNumPlanes, 0.0f);
    return status;
  }
  EncodedPosition encoded;
  encode(history, input_format, &encoded);
  std::copy(encoded.masks, encoded.masks + kNumPlanes, masks);
  std::copy(encoded.values, encoded.values + kNumPlanes, values);
  *transform = encoded.transform;
  const Position& pos = history.last();
  MoveList legal;
  legal_moves(pos, &legal);                 // in python-chess's order
  for (int j = 0; j < legal.count; ++j) {
    const int index = policy_index(pos, legal.moves[j], encoded.transform);
    if (index < 0) throw Error(LC0CORE_INTERNAL_ERROR, "a legal move without a policy index");
    moves[j] = move_to_python_chess(pos, legal.moves[j], false);
    indices[j] = int16_t(index);
  }
  *count = legal.count;
  if (in_check(pos)) *flags |= LC0CORE_ROW_IN_CHECK;
  return LC0CORE_OK;
}

// The k best slots of one row's probabilities, ties in slot order.
void top_of(const float* p, int count, int k, int16_t* top, float* probs) {
  int order[kMaxMoves];
  for (int j = 0; j < count; ++j) order[j] = j;
  const int m = std::min(k, count);
  std::partial_sort(order, order + m, order + count, [p](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  for (int j = 0; j < k; ++j) {
    top[j] = int16_t(j < m ? order[j] : -1);
    probs[j] = j < m ? p[order[j]] : 0.0f;
  }
}

}  // namespace
}  // namespace lc0core

using namespace lc0core;

LC0CORE_EXPORT int lc0core_encode_rows(int n, const char* rows, size_t length, int input_format, int threads,
                                       uint64_t* masks, float* values, int32_t* transforms,
                                       uint16_t* legal_moves, int16_t* policy_indices, int32_t* legal_counts,
                                       int32_t* flags, int32_t* status) {
  return guarded([&] {
    check_count(n);
    if (!is_supported_input_format(input_format)) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "unsupported input format " + std::to_string(input_format));
    }
    if (n == 0) return int(LC0CORE_OK);
    for (const void* p : {static_cast<const void*>(rows), static_cast<const void*>(masks),
                          static_cast<const void*>(values), static_cast<const void*>(transforms),
                          static_cast<const void*>(legal_moves), static_cast<const void*>(policy_indices),
                          static_cast<const void*>(legal_counts), static_cast<const void*>(flags),
                          static_cast<const void*>(status)}) {
      require(p, "a batch buffer");
    }
    const std::vector<size_t> starts = row_starts(n, rows, length);
    std::mutex failure_mutex;
    std::string failure;
    in_parts(n, threads, [&](int first, int end) {
      try {
        for (int i = first; i < end; ++i) {
          const size_t s = starts[size_t(i)];
          status[i] = encode_row(rows + s, starts[size_t(i) + 1] - s - 1, input_format,
                                 masks + size_t(i) * kNumPlanes, values + size_t(i) * kNumPlanes, transforms + i,
                                 legal_moves + size_t(i) * kMaxMoves, policy_indices + size_t(i) * kMaxMoves,
                                 legal_counts + i, flags + i);
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        failure = e.what();
      }
    });
    if (!failure.empty()) throw Error(LC0CORE_INTERNAL_ERROR, failure);
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_policy_top(int n, const float* logits, const int16_t* policy_indices,
                                      const int32_t* legal_counts, float temperature, int k, int threads,
                                      int16_t* top, float* probs) {
  return guarded([&] {
    check_count(n);
    if (k < 1 || k > kMaxMoves) throw Error(LC0CORE_INVALID_ARGUMENT, "k must be 1..256");
    if (!(temperature > 0.0f) || !std::isfinite(temperature)) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "temperature must be a positive number");
    }
    if (n == 0) return int(LC0CORE_OK);
    for (const void* p : {static_cast<const void*>(logits), static_cast<const void*>(policy_indices),
                          static_cast<const void*>(legal_counts), static_cast<const void*>(top),
                          static_cast<const void*>(probs)}) {
      require(p, "a batch buffer");
    }
    for (int i = 0; i < n; ++i) {
      if (legal_counts[i] < 0 || legal_counts[i] > kMaxMoves) throw Error(LC0CORE_INVALID_ARGUMENT, "legal count out of range");
      for (int j = 0; j < legal_counts[i]; ++j) {
        const int16_t index = policy_indices[size_t(i) * kMaxMoves + j];
        if (index < 0 || index >= kPolicySize) throw Error(LC0CORE_INVALID_ARGUMENT, "policy index out of range");
      }
    }
    in_parts(n, threads, [&](int first, int end) {
      float p[kMaxMoves];
      for (int i = first; i < end; ++i) {
        const int count = legal_counts[i];
        softmax_of_indices(logits + size_t(i) * kPolicySize, policy_indices + size_t(i) * kMaxMoves, count,
                           temperature, p);
        top_of(p, count, k, top + size_t(i) * k, probs + size_t(i) * k);
      }
    });
    return int(LC0CORE_OK);
  });
}

namespace {
// The FEN python-chess's Board.fen() writes: its e.p. square only where a
// legal capture onto it exists (the core keeps lc0's pseudo-legal flag: a
// pinned pawn beside it still sets it).
std::string python_chess_fen(const Position& pos) {
  if (pos.ep_square < 0) return to_fen(pos, false);
  MoveList moves;
  legal_moves(pos, &moves);
  const Bitboard pawns = pos.pieces(pos.side, PAWN);
  for (Move m : moves) {
    if (m.to() == pos.ep_square && (pawns & bit(m.from()))) return to_fen(pos, false);
  }
  Position without = pos;
  without.ep_square = -1;
  return to_fen(without, false);
}

// `text` into out[capacity], cut to fit, NUL-terminated.
void copy_out(const std::string& text, char* out, int capacity) {
  const size_t size = std::min(text.size(), size_t(capacity - 1));
  std::memcpy(out, text.data(), size);
  out[size] = '\0';
}
}  // namespace

LC0CORE_EXPORT int lc0core_position_row_error(const char* row, char* out, int capacity) {
  return guarded([&] {
    require(out, "out");
    if (capacity < 1) throw Error(LC0CORE_INVALID_ARGUMENT, "capacity < 1");
    const std::string text = bounded_string(row, kMaxRow, "row");
    PositionHistory history;
    std::string error;
    if (parse_position_row(text.c_str(), text.size() + 1, &history, &error) == LC0CORE_OK) error.clear();
    copy_out(error, out, capacity);
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_position_row_fen(const char* row, char* fen, int fen_capacity, char* error,
                                            int error_capacity) {
  return guarded([&] {
    require(fen, "fen");
    require(error, "error");
    if (fen_capacity < 1 || error_capacity < 1) throw Error(LC0CORE_INVALID_ARGUMENT, "capacity < 1");
    const std::string text = bounded_string(row, kMaxRow, "row");
    PositionHistory history;
    std::string why;
    const bool ok = parse_position_row(text.c_str(), text.size() + 1, &history, &why) == LC0CORE_OK;
    copy_out(ok ? python_chess_fen(history.last()) : std::string(), fen, fen_capacity);
    copy_out(ok ? std::string() : why, error, error_capacity);
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_row_fens(const char* row, char* out, size_t capacity, int32_t* clocks,
                                    int max_positions, int* count, char* error, int error_capacity) {
  return guarded([&] {
    require(out, "out");
    require(clocks, "clocks");
    require(count, "count");
    require(error, "error");
    if (error_capacity < 1) throw Error(LC0CORE_INVALID_ARGUMENT, "error_capacity < 1");
    *count = 0;
    const std::string text = bounded_string(row, kMaxRow, "row");
    PositionHistory history;
    std::string why;
    if (parse_position_row(text.c_str(), text.size() + 1, &history, &why) != LC0CORE_OK) {
      copy_out(why, error, error_capacity);
      return int(LC0CORE_OK);
    }
    if (history.size() > max_positions) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "the row has " + std::to_string(history.size()) +
                                                " positions, more than max_positions");
    }
    size_t at = 0;
    for (int i = 0; i < history.size(); ++i) {
      const std::string fen = python_chess_fen(history.at(i));
      if (at + fen.size() + 1 > capacity) throw Error(LC0CORE_INVALID_ARGUMENT, "the FENs do not fit in capacity");
      std::memcpy(out + at, fen.c_str(), fen.size() + 1);
      at += fen.size() + 1;
      clocks[i] = int32_t(std::min<uint32_t>(history.at(i).rule50, 0x7fffffffu));
    }
    *count = history.size();
    copy_out(std::string(), error, error_capacity);
    return int(LC0CORE_OK);
  });
}

namespace {

// A line of words (separated by single spaces) played from `fen`, each
// made a move and its text by `convert(pos, word, length, &move, &text)`
// (false: the line stops there), the texts written to out[capacity]
// separated by single spaces; *resolved: how many words became moves.
template <typename Convert>
int play_line(const char* fen, const char* words, const char* what, char* out, size_t capacity, int* resolved,
              Convert convert) {
  return guarded([&] {
    require(out, "out");
    require(resolved, "resolved");
    *resolved = 0;
    if (capacity < 1) throw Error(LC0CORE_INVALID_ARGUMENT, "capacity < 1");
    out[0] = '\0';
    const std::string start = bounded_string(fen, kMaxRow, "fen");
    const std::string line = bounded_string(words, kMaxRow, what);
    Position pos;
    std::string why;
    if (!parse_fen(start.c_str(), false, &pos, &why)) throw Error(LC0CORE_BAD_FEN, why);
    size_t at = 0;                     // written to out
    for (size_t first = 0; first < line.size();) {
      size_t end = line.find(' ', first);
      if (end == std::string::npos) end = line.size();
      Move move;
      std::string text;
      if (!convert(pos, line.data() + first, end - first, &move, &text)) break;
      if (at + (at ? 1 : 0) + text.size() + 1 > capacity) throw Error(LC0CORE_INVALID_ARGUMENT, "the moves do not fit in capacity");
      if (at) out[at++] = ' ';
      std::memcpy(out + at, text.c_str(), text.size() + 1);
      at += text.size();
      ++*resolved;
      pos = apply_move(pos, move);
      first = end + 1;
    }
    return int(LC0CORE_OK);
  });
}

}  // namespace

LC0CORE_EXPORT int lc0core_san_moves(const char* fen, const char* sans, char* out, size_t capacity, int* resolved) {
  return play_line(fen, sans, "sans", out, capacity, resolved,
                   [](const Position& pos, const char* word, size_t length, Move* move, std::string* text) {
                     if (!parse_san(pos, word, length, move)) return false;
                     *text = to_uci(pos, *move, false);
                     return true;
                   });
}

LC0CORE_EXPORT int lc0core_uci_sans(const char* fen, const char* ucis, char* out, size_t capacity, int* resolved) {
  return play_line(fen, ucis, "ucis", out, capacity, resolved,
                   [](const Position& pos, const char* word, size_t length, Move* move, std::string* text) {
                     if (!parse_uci(pos, std::string(word, length).c_str(), false, move)) return false;
                     *text = write_san(pos, *move);
                     return true;
                   });
}

LC0CORE_EXPORT int lc0core_fen_move_sans(int n, const char* texts, size_t length, char* out, size_t capacity) {
  return guarded([&] {
    check_count(n);
    if (n > 0) require(texts, "texts");
    require(out, "out");
    const std::vector<size_t> starts = row_starts(2 * n, texts, length);
    size_t at = 0;                     // written to out
    for (int i = 0; i < n; ++i) {
      Position pos;
      Move move;
      std::string why, san;
      if (parse_fen(texts + starts[size_t(2 * i)], false, &pos, &why) &&
          parse_uci(pos, texts + starts[size_t(2 * i + 1)], false, &move)) {
        san = write_san(pos, move);
      }
      if (at + san.size() + 1 > capacity) throw Error(LC0CORE_INVALID_ARGUMENT, "the moves do not fit in capacity");
      std::memcpy(out + at, san.c_str(), san.size() + 1);
      at += san.size() + 1;
    }
    return int(LC0CORE_OK);
  });
}
