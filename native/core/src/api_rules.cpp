// api_rules.cpp - the C ABI of the rules (include/lc0core_rules.h): checks
// every argument, runs everything inside guarded().
#include <cstring>
#include <string>

#include "../include/lc0core_rules.h"
#include "errors.h"
#include "history.h"
#include "position.h"
#include "san.h"

struct lc0core_game {
  static constexpr uint32_t kAlive = 0x6C63304Bu;  // catches some stale handles
  uint32_t alive = kAlive;
  bool chess960 = false;
  lc0core::PositionHistory history;
};

namespace lc0core {
namespace {

const char kStartFen[] = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

Position position_from(const char* fen, int chess960) {
  if (chess960 != 0 && chess960 != 1) throw Error(LC0CORE_INVALID_ARGUMENT, "chess960 must be 0 or 1");
  const std::string text = fen ? bounded_string(fen, LC0CORE_MAX_TEXT, "FEN") : kStartFen;
  Position pos;
  std::string error;
  if (!parse_fen(text.c_str(), chess960 != 0, &pos, &error)) throw Error(LC0CORE_BAD_FEN, error);
  return pos;
}

const Position& start_position() {
  static const Position start = position_from(nullptr, 0);
  return start;
}

const lc0core_game& checked(const lc0core_game* game) {
  require(game, "game");
  if (game->alive != lc0core_game::kAlive) throw Error(LC0CORE_INVALID_ARGUMENT, "not a live game handle");
  return *game;
}

lc0core_game& checked(lc0core_game* game) {
  return const_cast<lc0core_game&>(checked(static_cast<const lc0core_game*>(game)));
}

void check_depth(int depth) {
  if (depth < 0 || depth > LC0CORE_MAX_PERFT_DEPTH) {
    throw Error(LC0CORE_INVALID_ARGUMENT,
                "perft depth " + std::to_string(depth) + " is outside 0.." + std::to_string(LC0CORE_MAX_PERFT_DEPTH));
  }
}

void write_moves(const MoveList& list, uint16_t* moves, int capacity, int* count) {
  require(count, "count");
  require(moves, "moves");
  if (capacity < list.count) {
    throw Error(LC0CORE_BUFFER_TOO_SMALL,
                std::to_string(list.count) + " moves do not fit a buffer of " + std::to_string(capacity));
  }
  for (int i = 0; i < list.count; ++i) moves[i] = list.moves[i].raw;
  *count = list.count;
}

void write_text(const std::string& text, char* out, size_t capacity) {
  require(out, "output buffer");
  if (text.size() + 1 > capacity) {
    throw Error(LC0CORE_BUFFER_TOO_SMALL,
                "the answer needs " + std::to_string(text.size() + 1) + " bytes, the buffer has " + std::to_string(capacity));
  }
  std::memcpy(out, text.c_str(), text.size() + 1);
}

// A move given by number must be one of the position's legal moves.
Move legal_move(const Position& pos, uint16_t raw) {
  MoveList list;
  legal_moves(pos, &list);
  for (Move m : list) {
    if (m.raw == raw) return m;
  }
  throw Error(LC0CORE_ILLEGAL_MOVE, "move " + std::to_string(raw) + " is not legal here");
}

std::string uci_list(const Position& pos, bool chess960, const uint16_t* moves, int count) {
  if (count < 0 || count > LC0CORE_MAX_MOVES) throw Error(LC0CORE_INVALID_ARGUMENT, "move count out of range");
  if (count > 0) require(moves, "moves");
  std::string text;
  for (int i = 0; i < count; ++i) {
    if (i) text += ' ';
    text += to_uci(pos, legal_move(pos, moves[i]), chess960);
  }
  return text;
}

void divide(const Position& pos, int depth, uint16_t* moves, uint64_t* nodes, int capacity, int* count) {
  if (depth < 1 || depth > LC0CORE_MAX_PERFT_DEPTH) {
    throw Error(LC0CORE_INVALID_ARGUMENT,
                "perft divide depth " + std::to_string(depth) + " is outside 1.." + std::to_string(LC0CORE_MAX_PERFT_DEPTH));
  }
  require(nodes, "nodes");
  MoveList list;
  legal_moves(pos, &list);
  write_moves(list, moves, capacity, count);
  for (int i = 0; i < list.count; ++i) nodes[i] = perft(apply_move(pos, list.moves[i]), depth - 1);
}

}  // namespace
}  // namespace lc0core

using namespace lc0core;

LC0CORE_EXPORT int lc0core_fen_normalize(const char* fen, int chess960, char* out, size_t capacity) {
  return guarded([&] {
    write_text(to_fen(position_from(fen, chess960), chess960 != 0), out, capacity);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_legal_moves(const char* fen, int chess960, uint16_t* moves, int capacity, int* count) {
  return guarded([&] {
    MoveList list;
    legal_moves(position_from(fen, chess960), &list);
    write_moves(list, moves, capacity, count);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_moves_to_uci(const char* fen, int chess960, const uint16_t* moves, int count, char* out,
                                        size_t capacity) {
  return guarded([&] {
    write_text(uci_list(position_from(fen, chess960), chess960 != 0, moves, count), out, capacity);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_perft(const char* fen, int chess960, int depth, uint64_t* nodes) {
  return guarded([&] {
    check_depth(depth);
    require(nodes, "nodes");
    *nodes = perft(position_from(fen, chess960), depth);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_perft_divide(const char* fen, int chess960, int depth, uint16_t* moves, uint64_t* nodes,
                                        int capacity, int* count) {
  return guarded([&] {
    divide(position_from(fen, chess960), depth, moves, nodes, capacity, count);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_new(const char* fen, int chess960, lc0core_game** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    const Position first = position_from(fen, chess960);
    auto* game = new lc0core_game;
    game->chess960 = chess960 != 0;
    game->history.reset(first, first == start_position());
    *out = game;
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT void lc0core_game_free(lc0core_game* game) {
  if (game == nullptr || game->alive != lc0core_game::kAlive) return;
  game->alive = 0;
  delete game;
}

LC0CORE_EXPORT int lc0core_game_push_uci(lc0core_game* game, const char* move) {
  return guarded([&] {
    lc0core_game& g = checked(game);
    const std::string text = bounded_string(move, LC0CORE_MAX_TEXT, "move");
    if (g.history.size() > LC0CORE_MAX_GAME_PLIES) throw Error(LC0CORE_INVALID_ARGUMENT, "the game is too long");
    Move m;
    if (text.size() > 5 || !parse_uci(g.history.last(), text.c_str(), g.chess960, &m)) {
      std::string shown;
      for (char c : text.substr(0, 16)) shown += (c >= 0x20 && c < 0x7F) ? c : '?';
      throw Error(LC0CORE_ILLEGAL_MOVE, "illegal move '" + shown + "' in " + to_fen(g.history.last(), g.chess960));
    }
    g.history.push(m);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_push_san(lc0core_game* game, const char* san, char* out, size_t capacity,
                                         int* played) {
  return guarded([&] {
    lc0core_game& g = checked(game);
    require(out, "out");
    require(played, "played");
    *played = 0;
    const std::string text = bounded_string(san, LC0CORE_MAX_TEXT, "san");
    Move m;
    if (g.chess960 || g.history.size() > LC0CORE_MAX_GAME_PLIES ||
        !parse_san(g.history.last(), text.data(), text.size(), &m)) {
      return LC0CORE_OK;
    }
    const std::string uci = to_uci(g.history.last(), m, false);
    if (uci.size() + 1 > capacity) throw Error(LC0CORE_INVALID_ARGUMENT, "out is too small");
    std::memcpy(out, uci.c_str(), uci.size() + 1);
    g.history.push(m);
    *played = 1;
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_push(lc0core_game* game, uint16_t move) {
  return guarded([&] {
    lc0core_game& g = checked(game);
    if (g.history.size() > LC0CORE_MAX_GAME_PLIES) throw Error(LC0CORE_INVALID_ARGUMENT, "the game is too long");
    g.history.push(legal_move(g.history.last(), move));
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_pop(lc0core_game* game) {
  return guarded([&] {
    lc0core_game& g = checked(game);
    if (g.history.size() <= 1) throw Error(LC0CORE_INVALID_ARGUMENT, "no move to take back");
    g.history.pop();
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_legal_moves(const lc0core_game* game, uint16_t* moves, int capacity, int* count) {
  return guarded([&] {
    MoveList list;
    legal_moves(checked(game).history.last(), &list);
    write_moves(list, moves, capacity, count);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_moves_to_uci(const lc0core_game* game, const uint16_t* moves, int count, char* out,
                                             size_t capacity) {
  return guarded([&] {
    const lc0core_game& g = checked(game);
    write_text(uci_list(g.history.last(), g.chess960, moves, count), out, capacity);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_fen(const lc0core_game* game, char* out, size_t capacity) {
  return guarded([&] {
    const lc0core_game& g = checked(game);
    write_text(to_fen(g.history.last(), g.chess960), out, capacity);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_get_status(const lc0core_game* game, lc0core_game_status* out) {
  return guarded([&] {
    const PositionHistory& h = checked(game).history;
    require(out, "out");
    const Position& pos = h.last();
    MoveList list;
    legal_moves(pos, &list);
    const bool check = in_check(pos);
    out->positions = h.size();
    out->white_to_move = pos.side == WHITE;
    out->legal_moves = list.count;
    out->in_check = check;
    out->checkmate = check && list.count == 0;
    out->stalemate = !check && list.count == 0;
    out->rule50 = pos.rule50;
    out->fullmove = int(pos.fullmove > 0x7FFFFFFFu ? 0x7FFFFFFFu : pos.fullmove);
    out->insufficient_material = !has_mating_material(pos);
    out->repetitions = h.repetitions(h.size() - 1);
    out->cycle_length = h.cycle_length(h.size() - 1);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT int lc0core_game_perft_divide(const lc0core_game* game, int depth, uint16_t* moves, uint64_t* nodes,
                                             int capacity, int* count) {
  return guarded([&] {
    divide(checked(game).history.last(), depth, moves, nodes, capacity, count);
    return LC0CORE_OK;
  });
}
