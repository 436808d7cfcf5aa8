/* lc0core_encode_rows.h - positions as text rows to the network's input and
 * from its output to a summary, in batches, with no per-position work left
 * to the caller (analysis's network-only mode).
 *
 * A row is "FEN" or "FEN moves m1 m2 ..." (UCI moves from the FEN, as the
 * UCI `position` command writes it); `rows` holds n NUL-terminated rows back
 * to back, `length` bytes in all. Per-row outputs use a fixed stride of
 * LC0CORE_MAX_MOVES (256) moves. `threads` > 1 splits the rows over that
 * many threads (a pool kept for the process).
 */
#ifndef LC0CORE_ENCODE_ROWS_H
#define LC0CORE_ENCODE_ROWS_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
enum { LC0CORE_ROW_IN_CHECK = 1 };

/* Encodes each row for `input_format`: masks, values (n x 112), transforms
 * (n); its legal moves (python-chess's 16-bit notation, python-chess's
 * order) and their policy indices at [i * 256, i * 256 + legal_counts[i]);
 * flags (LC0CORE_ROW_*); status (0, LC0CORE_BAD_FEN or LC0CORE_ILLEGAL_MOVE:
 * then planes are zero and no moves are listed). */
int lc0core_encode_rows(int n, const char* rows, size_t length, int input_format, int threads,
                        uint64_t* masks, float* values, int32_t* transforms, uint16_t* legal_moves,
                        int16_t* policy_indices, int32_t* legal_counts, int32_t* flags,
                        int32_t* status);

/* The k most probable legal moves of each row after the softmax over its
 * legal moves (policy temperature `temperature`, 1 = plain): top[i * k + j]
 * is a slot into row i's legal moves (-1 past its count), probs the
 * probability; ties keep the legal-move order. */
int lc0core_policy_top(int n, const float* logits, const int16_t* policy_indices,
                       const int32_t* legal_counts, float temperature, int k, int threads,
                       int16_t* top, float* probs);

/* Why a row is refused ("" when it is not). */
int lc0core_position_row_error(const char* row, char* out, int capacity);
/* The FEN of the position a row names (after its moves, as python-chess's
 * Board.fen() writes it) in `fen`, and "" in `error`; a refused row: "" in
 * `fen` and why in `error`. Texts longer than a capacity are cut. */
int lc0core_position_row_fen(const char* row, char* fen, int fen_capacity, char* error, int error_capacity);
/* Every position of a row, its FEN first and one after each move: *count
 * FENs (as python-chess's Board.fen() writes them) NUL-terminated back to
 * back in out[capacity], their halfmove clocks in clocks[max_positions].
 * A refused row: *count = 0 and why in `error` (else ""). A row with more
 * than max_positions positions, or FENs past `capacity`, is an error status. */
int lc0core_row_fens(const char* row, char* out, size_t capacity, int32_t* clocks, int max_positions,
                     int* count, char* error, int error_capacity);
/* A PGN game's SAN tokens (as python-chess's reader cuts them, separated by
 * single spaces) played from `fen` (standard chess) as UCI moves separated
 * by single spaces in out[capacity]; *resolved: how many tokens, from the
 * first, became moves. It stops at the first token it cannot be sure
 * python-chess's Board.parse_san reads as the same legal move (illegal,
 * ambiguous, a null move, unusual forms): the caller reads those with
 * python-chess. A bad FEN is LC0CORE_BAD_FEN, a full `out` an error status. */
int lc0core_san_moves(const char* fen, const char* sans, char* out, size_t capacity, int* resolved);
/* The other way: UCI moves (separated by single spaces) played from `fen`
 * (standard chess) as python-chess's Board.san writes each, check and mate
 * marks included, separated by single spaces in out[capacity]; *resolved:
 * how many moves, from the first, were legal and written (it stops at the
 * first that is not). A bad FEN is LC0CORE_BAD_FEN, a full `out` an error
 * status. */
int lc0core_uci_sans(const char* fen, const char* ucis, char* out, size_t capacity, int* resolved);
/* Many single moves at once: `texts` holds n pairs of NUL-terminated texts
 * back to back, `length` bytes in all, a FEN (standard chess) and a UCI
 * move from it; out[capacity] gets n NUL-terminated texts back to back,
 * each the move as python-chess's Board.san writes it, or "" where the FEN
 * is bad or the move not legal there (8 bytes a move always suffice). */
int lc0core_fen_move_sans(int n, const char* texts, size_t length, char* out, size_t capacity);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
