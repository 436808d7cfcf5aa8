// movegen.cpp - legal move generation: king moves to safe squares, check
// evasions (capture or block a single checker, only the king against two),
// pinned pieces kept on their pin line, en passant verified by looking at
// the king after the capture (this covers the two pawns leaving one rank),
// castling (standard and Chess960) as king-takes-own-rook. The moves come
// in python-chess's order (generate_legal_moves), which the search's edge
// order and its softmax sum follow: in check the king's moves first; then
// each piece but the pawns by from-square descending (the king among them
// when not in check), its targets descending; castling (rook descending);
// pawn captures (from-square, then target, descending; promotions q r b n);
// single pushes and double pushes (descending); en passant captures.
#include "attacks.h"
#include "position.h"

namespace lc0core {
namespace {

// Legal positions have at most 218 moves; the bound check keeps a fantasy
// position from writing past the list (it loses moves instead).
inline void add(MoveList* out, int from, int to, int promotion = 0) {
  if (out->count < kMaxMoves) out->moves[out->count++] = Move(from, to, promotion);
}

inline void add_pawn_move(MoveList* out, int from, int to) {
  if (rank_of(to) == 0 || rank_of(to) == 7) {
    for (int p = QUEEN; p >= KNIGHT; --p) add(out, from, to, p);
  } else {
    add(out, from, to);
  }
}

// Is `square` attacked by `by` when the board is `occupied`?
inline bool attacked(const Position& pos, int square, Color by, Bitboard occupied) {
  return attackers_to(pos, square, occupied) & pos.by_color[by] & occupied;
}

void castling_moves(const Position& pos, int king, MoveList* out) {
  const Color us = pos.side, them = Color(us ^ 1);
  const Bitboard rank = back_rank(us);
  if (!(bit(king) & rank)) return;
  const Bitboard occupied = pos.occupied();
  Bitboard rooks = pos.castling_rooks & pos.pieces(us, ROOK) & rank;
  while (rooks) {
    const int rook = pop_msb(rooks);
    const bool king_side = rook > king;
    const int king_to = (king_side ? 6 : 2) + (rank_of(king) << 3);
    const int rook_to = (king_side ? 5 : 3) + (rank_of(king) << 3);
    const Bitboard king_path = kAttacks.between[king][king_to] | bit(king_to);
    const Bitboard rook_path = kAttacks.between[rook][rook_to] | bit(rook_to);
    if ((occupied ^ bit(king) ^ bit(rook)) & (king_path | rook_path)) continue;
    // The king's own square and the squares it crosses, with the king lifted.
    bool safe = true;
    Bitboard crossed = kAttacks.between[king][king_to] | bit(king);
    while (crossed && safe) safe = !attacked(pos, pop_lsb(crossed), them, occupied ^ bit(king));
    // Its destination once both have moved (a Chess960 rook may have shielded it).
    if (safe) {
      const Bitboard after = (occupied ^ bit(king) ^ bit(rook)) | bit(king_to) | bit(rook_to);
      safe = !attacked(pos, king_to, them, after);
    }
    if (safe) add(out, king, rook);
  }
}

}  // namespace

bool in_check(const Position& pos) {
  const Bitboard king = pos.pieces(pos.side, KING);
  if (!king) return false;
  return attackers_to(pos, lsb(king), pos.occupied()) & pos.by_color[pos.side ^ 1];
}

void legal_moves(const Position& pos, MoveList* out) {
  out->count = 0;
  const Color us = pos.side, them = Color(us ^ 1);
  const Bitboard ours = pos.by_color[us], theirs = pos.by_color[them];
  const Bitboard occupied = ours | theirs;
  if (!pos.pieces(us, KING)) return;  // parse_fen admits no such position
  const int king = lsb(pos.pieces(us, KING));
  const Bitboard checkers = attackers_to(pos, king, occupied) & theirs;

  // King steps, to squares not attacked once the king has left its square.
  Bitboard king_to = 0;
  for (Bitboard steps = kAttacks.king[king] & ~ours; steps;) {
    const int to = pop_lsb(steps);
    if (!attacked(pos, to, them, occupied ^ bit(king))) king_to |= bit(to);
  }
  if (checkers) {                     // in check the king's moves come first
    for (Bitboard to = king_to; to;) add(out, king, pop_msb(to));
    if (checkers & (checkers - 1)) return;  // double check: only the king moves
  }

  // Squares a non-king move must reach: anywhere, or onto the checker's line.
  const Bitboard target = checkers ? (kAttacks.between[king][lsb(checkers)] | checkers) : ~ours;

  // Pinned pieces: our single piece between the king and an enemy slider.
  Bitboard pinned = 0;
  Bitboard snipers = (rook_attacks(king, 0) & theirs & (pos.by_type[ROOK] | pos.by_type[QUEEN])) |
                     (bishop_attacks(king, 0) & theirs & (pos.by_type[BISHOP] | pos.by_type[QUEEN]));
  while (snipers) {
    const Bitboard blockers = kAttacks.between[king][pop_lsb(snipers)] & occupied;
    if (blockers && !(blockers & (blockers - 1))) pinned |= blockers & ours;
  }
  auto allowed = [&](int from) {
    return (pinned & bit(from)) ? kAttacks.line[king][from] : ~Bitboard(0);
  };

  // Every piece but the pawns (and the king in check, done above).
  const Bitboard diagonal = pos.by_type[BISHOP] | pos.by_type[QUEEN];
  const Bitboard straight = pos.by_type[ROOK] | pos.by_type[QUEEN];
  Bitboard pieces = ours & ~pos.by_type[PAWN] & ~(checkers ? bit(king) : 0);
  while (pieces) {
    const int from = pop_msb(pieces);
    Bitboard to;
    if (from == king) {
      to = king_to;
    } else if (pos.by_type[KNIGHT] & bit(from)) {
      to = (pinned & bit(from)) ? 0 : kAttacks.knight[from] & target;   // a pinned knight never moves
    } else {
      Bitboard reach = 0;
      if (diagonal & bit(from)) reach |= bishop_attacks(from, occupied);
      if (straight & bit(from)) reach |= rook_attacks(from, occupied);
      to = reach & target & allowed(from);
    }
    while (to) add(out, from, pop_msb(to));
  }
  if (!checkers && pos.castling_rooks) castling_moves(pos, king, out);

  const int forward = us == WHITE ? 8 : -8;
  const int start_rank = us == WHITE ? 1 : 6;
  const Bitboard pawns = pos.pieces(us, PAWN);
  for (Bitboard from_set = pawns; from_set;) {
    const int from = pop_msb(from_set);
    Bitboard captures = kAttacks.pawn[us][from] & theirs & target & allowed(from);
    while (captures) add_pawn_move(out, from, pop_msb(captures));
  }
  // Pushes by target square, descending: all single pushes, then the double ones.
  const Bitboard empty = ~occupied;
  const Bitboard single = (us == WHITE ? pawns << 8 : pawns >> 8) & empty;
  const Bitboard start = pawns & (Bitboard(0xFF) << (8 * start_rank));
  const Bitboard doubles = (us == WHITE ? (start << 8 & empty) << 8 : (start >> 8 & empty) >> 8) & empty;
  for (Bitboard to_set = single & target; to_set;) {
    const int to = pop_msb(to_set), from = to - forward;
    if (allowed(from) & bit(to)) add_pawn_move(out, from, to);
  }
  for (Bitboard to_set = doubles & target; to_set;) {
    const int to = pop_msb(to_set), from = to - 2 * forward;
    if (allowed(from) & bit(to)) add(out, from, to);
  }

  if (pos.ep_square >= 0) {
    const int to = pos.ep_square;
    const int victim = to - forward;
    if (!(occupied & bit(to)) && (pos.pieces(them, PAWN) & bit(victim))) {
      Bitboard capturers = kAttacks.pawn[them][to] & pawns;
      while (capturers) {
        const int from = pop_msb(capturers);
        const Bitboard after = (occupied ^ bit(from) ^ bit(victim)) | bit(to);
        const Bitboard enemies = theirs & ~bit(victim);
        if (!(attackers_to(pos, king, after) & enemies)) add(out, from, to);
      }
    }
  }
}

uint64_t perft(const Position& pos, int depth) {
  MoveList moves;
  legal_moves(pos, &moves);
  if (depth <= 1) return depth == 1 ? uint64_t(moves.count) : 1;
  uint64_t nodes = 0;
  for (Move m : moves) nodes += perft(apply_move(pos, m), depth - 1);
  return nodes;
}

}  // namespace lc0core
