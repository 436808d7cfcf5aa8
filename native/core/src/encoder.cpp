// encoder.cpp - lc0's 112 input planes of a history's newest position.
// The specification is lc0_rocm/encoder.py (encode_packed), which equals lc0
// v0.32.1; the steps below follow it one for one.
#include "encoder.h"

#include "bitboard_transform.h"

namespace lc0core {
namespace {

constexpr int kHistory = 8;
constexpr int kPlanesPerBoard = 13;
constexpr int kAuxBase = kHistory * kPlanesPerBoard;   // 104
constexpr uint64_t kAllOnes = ~uint64_t(0);
constexpr uint64_t kRank1 = 0xFFULL;
constexpr uint64_t kRank8 = 0xFFULL << 56;

bool is_canonical(int f) { return f >= 3; }
bool is_hectoplies(int f) { return f >= 4; }
bool is_armageddon(int f) { return f == 132 || f == 133; }
bool keeps_only_repetitions(int f) { return f == 5 || f == 133; }

// The 12 bitboards of `pos` in real orientation: white P..K, black P..K.
void real_pieces(const Position& pos, uint64_t out[12]) {
  for (int t = 0; t < 6; ++t) {
    out[t] = pos.by_color[WHITE] & pos.by_type[t];
    out[6 + t] = pos.by_color[BLACK] & pos.by_type[t];
  }
}

// Real-orientation pieces -> ours P..K then theirs P..K, where "ours" is
// `mover`'s, in the mover's frame (ranks mirrored for black).
void to_mover_frame(const uint64_t real[12], Color mover, uint64_t out[12]) {
  for (int i = 0; i < 12; ++i) {
    const uint64_t bb = real[mover == WHITE ? i : (i + 6) % 12];
    out[i] = mover == BLACK ? mirror_ranks(bb) : bb;
  }
}

void mover_frame_pieces(const Position& pos, Color mover, uint64_t out[12]) {
  uint64_t real[12];
  real_pieces(pos, real);
  to_mover_frame(real, mover, out);
}

// A FEN's first position with its e.p. double push taken back (lc0's fill
// boards): the pusher's pawn bitboard loses the pushed-to square and gains
// the start square (bitboard arithmetic only, as the Python encoder).
void undo_double_push(const Position& pos, uint64_t real[12]) {
  const int file = pos.ep_square & 7;
  if (pos.side == BLACK) {   // white pushed f2-f4
    real[PAWN] = (real[PAWN] & ~(uint64_t(1) << (24 + file))) | (uint64_t(1) << (8 + file));
  } else {                   // black pushed f7-f5
    real[6 + PAWN] = (real[6 + PAWN] & ~(uint64_t(1) << (32 + file))) | (uint64_t(1) << (48 + file));
  }
}

// The rook squares carrying castling rights, by (colour, kingside), or -1:
// a rook is kingside when it stands on a higher file than its king.
void castling_rook_squares(const Position& pos, int rooks[2][2]) {
  for (int c = 0; c < 2; ++c) {
    rooks[c][0] = rooks[c][1] = -1;
    const uint64_t back_rank = c == WHITE ? kRank1 : kRank8;
    const uint64_t king = pos.pieces(Color(c), KING) & back_rank;
    if (!king) continue;
    const int king_file = __builtin_ctzll(king) & 7;
    for (uint64_t bb = pos.castling_rooks & back_rank; bb; bb &= bb - 1) {
      const int square = __builtin_ctzll(bb);
      rooks[c][(square & 7) > king_file ? 1 : 0] = square;
    }
  }
}

// lc0's canonical transform of the current position (its ChooseTransform).
int choose_transform(const Position& cur) {
  if (cur.castling_rooks) return 0;
  uint64_t frame[12];
  mover_frame_pieces(cur, cur.side, frame);
  uint64_t ours = 0, theirs = 0;
  for (int t = 0; t < 6; ++t) {
    ours |= frame[t];
    theirs |= frame[6 + t];
  }
  uint64_t king = frame[KING];
  int transform = 0;
  if (king & 0x0F0F0F0F0F0F0F0FULL) {        // our king on files a-d
    transform |= kFlip;
    king = flip_files(king);
  }
  if (frame[PAWN] | frame[6 + PAWN]) return transform;   // pawns: only the flip is symmetric
  if (king & 0xFFFFFFFF00000000ULL) {        // our king on ranks 5-8
    transform |= kMirror;
    king = mirror_ranks(king);
  }
  if (king & 0xE0C08000ULL) return transform | kTranspose;   // h2, g3, h3, f4, g4, h4
  if (king & 0x10204080ULL) {                // on the a8-h1 diagonal: lc0's tie-break
    auto both = [&](int t) { return frame[t] | frame[6 + t]; };
    const uint64_t candidates[] = {ours | theirs, ours, both(KING), both(QUEEN),
                                   both(ROOK),    both(KNIGHT), both(BISHOP)};
    for (uint64_t c : candidates) {
      const uint64_t plain = transform_bitboard(c, transform);
      const uint64_t transposed = transpose_anti_diagonal(plain);
      if (plain != transposed) return plain > transposed ? transform | kTranspose : transform;
    }
  }
  return transform;
}

// Fills the 8 history boards (planes 0..103) following lc0's history rules.
void encode_history(const PositionHistory& history, int input_format, EncodedPosition* out) {
  const bool canonical = is_canonical(input_format);
  const bool repeats_only = keeps_only_repetitions(input_format);
  const int current = history.size() - 1;
  const Position& cur = history.last();
  int slots = 0;
  for (int index = current; slots < kHistory;) {
    const bool is_fill = index < 0;
    const Position& pos = history.at(is_fill ? 0 : index);
    if (canonical && pos.castling_rooks != cur.castling_rooks) break;
    if (canonical && index != current && pos.ep_square >= 0) break;
    if (is_fill && history.from_startpos()) break;
    const bool repeated = !is_fill && history.repetitions(index) >= 1;
    if (repeats_only && slots > 0 && !repeated) {
      // Fill copies never repeat; lc0 v0.32.1 loops forever on them.
      if (pos.rule50 == 0 || is_fill) break;
      --index;
      continue;
    }
    uint64_t* planes = out->masks + slots * kPlanesPerBoard;
    uint64_t real[12];
    real_pieces(pos, real);
    if (is_fill && pos.ep_square >= 0) undo_double_push(pos, real);
    to_mover_frame(real, cur.side, planes);
    planes[12] = repeated ? kAllOnes : 0;
    ++slots;
    if (canonical && pos.rule50 == 0) break;
    --index;
  }
}

void encode_aux(const Position& cur, int input_format, EncodedPosition* out) {
  uint64_t* aux = out->masks + kAuxBase;
  int rooks[2][2];
  castling_rook_squares(cur, rooks);
  const Color us = cur.side, them = cur.side == WHITE ? BLACK : WHITE;
  if (input_format == 1) {
    aux[0] = rooks[us][0] >= 0 ? kAllOnes : 0;     // our O-O-O
    aux[1] = rooks[us][1] >= 0 ? kAllOnes : 0;     // our O-O
    aux[2] = rooks[them][0] >= 0 ? kAllOnes : 0;
    aux[3] = rooks[them][1] >= 0 ? kAllOnes : 0;
  } else {
    for (int side = 0; side < 2; ++side) {          // queenside, kingside rook squares
      uint64_t bb = 0;
      for (int c = 0; c < 2; ++c) {
        if (rooks[c][side] >= 0) bb |= uint64_t(1) << rooks[c][side];
      }
      aux[side] = us == BLACK ? mirror_ranks(bb) : bb;
    }
  }
  if (is_canonical(input_format)) {
    if (cur.ep_square >= 0) aux[4] = uint64_t(1) << (56 + (cur.ep_square & 7));
  } else if (us == BLACK) {
    aux[4] = kAllOnes;
  }
  aux[5] = kAllOnes;
  out->values[kAuxBase + 5] =
      is_hectoplies(input_format) ? float(double(cur.rule50) / 100.0) : float(cur.rule50);
  if (is_armageddon(input_format) && us == BLACK) aux[6] = kAllOnes;
  aux[7] = kAllOnes;
}

}  // namespace

bool is_supported_input_format(int f) {
  return f == 1 || f == 2 || f == 3 || f == 4 || f == 132 || f == 5 || f == 133;
}

void encode(const PositionHistory& history, int input_format, EncodedPosition* out) {
  for (int i = 0; i < kNumPlanes; ++i) {
    out->masks[i] = 0;
    out->values[i] = 1.0f;
  }
  encode_history(history, input_format, out);
  const Position& cur = history.last();
  encode_aux(cur, input_format, out);
  out->transform = is_canonical(input_format) ? choose_transform(cur) : 0;
  if (out->transform) {
    // Planes 0..108: the history boards, castling and the e.p. plane.
    for (int i = 0; i <= kAuxBase + 4; ++i) {
      out->masks[i] = transform_bitboard(out->masks[i], out->transform);
    }
  }
}

}  // namespace lc0core
