/* lc0core_encode.h - the native core's ABI for lc0's input encoding, policy
 * indices, the legal-move softmax and the `random` network.
 *
 * Batches of boards arrive the way python-chess holds a game: for each
 * board, the position a window of its game starts at (bitboards as
 * python-chess stores them) and the moves played from there (16 bits:
 * from | to << 6 | promotion << 12, python-chess's square numbers, piece
 * types and castling notation). All buffers belong to the caller.
 */
#ifndef LC0CORE_ENCODE_H
#define LC0CORE_ENCODE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
/* The random network's settings (lc0's backend options seed and uniform);
 * pass a pointer to one as `ctx` of lc0core_random_forward. */
typedef struct {
  int64_t seed;
  int32_t uniform;
} lc0core_random_net;

/* An lc0core_forward_fn: lc0's random network on n positions' packed
 * planes (masks, values: n x 112); writes policy logits (n x 1858), wdl
 * (n x 3) and moves left (n, zeros). */
int lc0core_random_forward(void* ctx, int n, const uint64_t* masks, const float* values,
                           float* policy, float* wdl, float* moves_left);

/* lc0's policy index table: out[(from * 64 + to) * 4 + slot], slot 0 = no
 * promotion or knight, 1 = queen, 2 = rook, 3 = bishop; -1 where lc0 has no
 * output. `capacity` must be at least 16384. */
int lc0core_policy_table(int16_t* out, int capacity);

/* Encodes a batch of n boards for lc0's `input_format`.
 *   roots: n x 15 uint64, the first position of each board's window as
 *     python-chess stores it: pawns, knights, bishops, rooks, queens, kings,
 *     white pieces, black pieces, castling_rights (unfiltered), white to
 *     move (1/0), e.p. square (64 none), halfmove clock, fullmove number,
 *     and two flags: the window starts at the game's first position, the
 *     game is Chess960.
 *   moves, move_offsets (n + 1): the moves from the window's start to the
 *     board, board i's are moves[move_offsets[i] .. move_offsets[i + 1]).
 * Outputs, board by board: masks, values (n x 112), transforms (n); the
 * legal moves of the board's position (python-chess's notation and order)
 * and their policy indices at legal[legal_offsets[i] .. legal_offsets[i + 1])
 * (`legal_capacity` entries available; n x 256 always suffices); and
 * board_status (n): 0, or the status why the core refused that board (an
 * impossible position, a move that is not legal, a move without a policy
 * index), whose planes and moves are then left empty for the caller to fill
 * some other way. Returns a status for the batch as a whole. */
int lc0core_encode_batch(int n, const uint64_t* roots, const uint16_t* moves, const int32_t* move_offsets, int input_format,
                         uint64_t* masks, float* values, int32_t* transforms,
                         uint16_t* legal_moves, int16_t* policy_indices, int32_t* legal_offsets,
                         int legal_capacity, int32_t* board_status);

/* Softmax of each board's logits (n x 1858) over its legal moves' policy
 * indices (as lc0core_encode_batch lays them out), with lc0's policy
 * temperature (1 = plain softmax); probs gets one value per index. */
int lc0core_legal_softmax_batch(int n, const float* logits, const int16_t* policy_indices,
                                const int32_t* legal_offsets, float temperature, float* probs);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
