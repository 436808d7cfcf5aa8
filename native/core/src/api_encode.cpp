// api_encode.cpp - the C ABI of include/lc0core_encode.h: the policy table,
// batch encoding of python-chess games and the batch legal softmax. (The
// random network's entry point lives with it in random_net.cpp.)
#include <cmath>
#include <string>

#include "encoder.h"
#include "errors.h"
#include "history.h"
#include "policy_table.h"
#include "pychess_bridge.h"

namespace lc0core {
namespace {

constexpr int kMaxBatch = 1 << 20;
constexpr int kMaxGameMoves = 1 << 16;   // moves in one board's window

void check_batch_size(int n) {
  if (n < 0 || n > kMaxBatch) {
    throw Error(LC0CORE_INVALID_ARGUMENT, "batch size " + std::to_string(n) + " out of range");
  }
}

// Board i of a batch: its history replayed, or the status refusing it.
int replay(const PythonChessPosition& root, const uint16_t* moves, int count,
           PositionHistory* history, MoveList* scratch) {
  Position first;
  std::string error;
  if (!position_from_python_chess(root, &first, &error)) return LC0CORE_BAD_FEN;
  const bool game_start = root.words[kPyGameStart] != 0;
  history->reset(first, game_start && first == standard_start());
  for (int i = 0; i < count; ++i) {
    Move move;
    if (!move_from_python_chess(history->last(), moves[i], scratch, &move)) {
      return LC0CORE_ILLEGAL_MOVE;
    }
    history->push(move);
  }
  return LC0CORE_OK;
}

// Board i's legal moves in python-chess's order and notation with their
// policy indices; LC0CORE_INTERNAL_ERROR if one has none (never for a
// legal move).
int legal_moves_and_indices(const Position& pos, bool chess960, int transform,
                            MoveList* moves, uint16_t* out_moves, int16_t* out_indices) {
  legal_moves(pos, moves);                  // in python-chess's order
  for (int j = 0; j < moves->count; ++j) {
    const int index = policy_index(pos, moves->moves[j], transform);
    if (index < 0) return LC0CORE_INTERNAL_ERROR;
    out_moves[j] = move_to_python_chess(pos, moves->moves[j], chess960);
    out_indices[j] = int16_t(index);
  }
  return LC0CORE_OK;
}

void clear_planes(uint64_t* masks, float* values) {
  for (int p = 0; p < kNumPlanes; ++p) {
    masks[p] = 0;
    values[p] = 0.0f;
  }
}

}  // namespace
}  // namespace lc0core

using namespace lc0core;

LC0CORE_EXPORT int lc0core_policy_table(int16_t* out, int capacity) {
  return guarded([&] {
    require(out, "out");
    if (capacity < 64 * 64 * 4) throw Error(LC0CORE_BUFFER_TOO_SMALL, "policy table needs 16384 entries");
    const PolicyTable& table = policy_table();
    const int16_t* flat = &table.index[0][0][0];
    for (int i = 0; i < 64 * 64 * 4; ++i) out[i] = flat[i];
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_encode_batch(int n, const uint64_t* roots, const uint16_t* moves, const int32_t* move_offsets,
                                        int input_format, uint64_t* masks, float* values,
                                        int32_t* transforms, uint16_t* legal_out,
                                        int16_t* policy_indices, int32_t* legal_offsets,
                                        int legal_capacity, int32_t* board_status) {
  return guarded([&] {
    check_batch_size(n);
    if (!is_supported_input_format(input_format)) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "unsupported input format " + std::to_string(input_format));
    }
    require(move_offsets, "move_offsets");
    require(legal_offsets, "legal_offsets");
    legal_offsets[0] = 0;
    if (n == 0) return LC0CORE_OK;
    for (const void* p : {static_cast<const void*>(roots), static_cast<const void*>(masks), static_cast<const void*>(values),
                          static_cast<const void*>(transforms), static_cast<const void*>(board_status)}) {
      require(p, "a batch buffer");
    }
    if (move_offsets[0] != 0) throw Error(LC0CORE_INVALID_ARGUMENT, "move_offsets[0] must be 0");
    for (int i = 0; i < n; ++i) {
      const int64_t count = int64_t(move_offsets[i + 1]) - move_offsets[i];
      if (count < 0 || count > kMaxGameMoves) {
        throw Error(LC0CORE_INVALID_ARGUMENT, "move_offsets must be increasing");
      }
    }
    if (move_offsets[n] > 0) require(moves, "moves");
    if (legal_capacity < 0) throw Error(LC0CORE_INVALID_ARGUMENT, "negative legal_capacity");
    if (legal_capacity > 0) {
      require(legal_out, "legal_moves");
      require(policy_indices, "policy_indices");
    }

    PositionHistory history;
    MoveList scratch, legal;
    EncodedPosition encoded;
    int32_t used = 0;
    for (int i = 0; i < n; ++i) {
      uint64_t* board_masks = masks + size_t(i) * kNumPlanes;
      float* board_values = values + size_t(i) * kNumPlanes;
      const PythonChessPosition root{roots + size_t(i) * kPyWords};
      int status = replay(root, moves + move_offsets[i], move_offsets[i + 1] - move_offsets[i],
                          &history, &scratch);
      if (status == LC0CORE_OK) {
        encode(history, input_format, &encoded);
        if (legal_capacity - used < kMaxMoves) {
          throw Error(LC0CORE_BUFFER_TOO_SMALL, "legal_capacity too small for the batch");
        }
        status = legal_moves_and_indices(history.last(), root.words[kPyChess960] != 0,
                                         encoded.transform, &legal, legal_out + used,
                                         policy_indices + used);
      }
      board_status[i] = status;
      if (status == LC0CORE_OK) {
        for (int p = 0; p < kNumPlanes; ++p) {
          board_masks[p] = encoded.masks[p];
          board_values[p] = encoded.values[p];
        }
        transforms[i] = encoded.transform;
        used += legal.count;
      } else {
        clear_planes(board_masks, board_values);
        transforms[i] = 0;
      }
      legal_offsets[i + 1] = used;
    }
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_legal_softmax_batch(int n, const float* logits, const int16_t* policy_indices,
                                               const int32_t* legal_offsets, float temperature,
                                               float* probs) {
  return guarded([&] {
    check_batch_size(n);
    if (n == 0) return LC0CORE_OK;
    require(logits, "logits");
    require(legal_offsets, "legal_offsets");
    if (!(temperature > 0.0f) || !std::isfinite(temperature)) {
      throw Error(LC0CORE_INVALID_ARGUMENT, "temperature must be a positive number");
    }
    if (legal_offsets[0] != 0) throw Error(LC0CORE_INVALID_ARGUMENT, "legal_offsets[0] must be 0");
    for (int i = 0; i < n; ++i) {
      const int64_t count = int64_t(legal_offsets[i + 1]) - legal_offsets[i];
      if (count < 0 || count > kMaxMoves) {
        throw Error(LC0CORE_INVALID_ARGUMENT, "legal_offsets: a board has a negative or too large move count");
      }
    }
    if (legal_offsets[n] > 0) {
      require(policy_indices, "policy_indices");
      require(probs, "probs");
      for (int32_t j = 0; j < legal_offsets[n]; ++j) {
        if (policy_indices[j] < 0 || policy_indices[j] >= kPolicySize) {
          throw Error(LC0CORE_INVALID_ARGUMENT, "policy index out of range");
        }
      }
    }
    for (int i = 0; i < n; ++i) {
      softmax_of_indices(logits + size_t(i) * kPolicySize, policy_indices + legal_offsets[i],
                         legal_offsets[i + 1] - legal_offsets[i], temperature, probs + legal_offsets[i]);
    }
    return LC0CORE_OK;
  });
}
