/* lc0core_rules.h - chess rules through the C ABI: legal moves, perft, FEN
 * checks, and a game handle (a position history with lc0's repetition and
 * draw facts).
 *
 * Moves are uint16: from | to << 6 | promotion << 12 (promotion 0, or
 * 1 knight .. 4 queen); castling is king-takes-own-rook. FEN text is read
 * up to LC0CORE_MAX_TEXT bytes and must end with a NUL within them; move
 * text likewise. `chess960` is 0 or 1: castling in UCI text is e1g1 in
 * standard chess and king-takes-rook (e1h1) in Chess960; Shredder/X-FEN
 * castling letters are read in both. Output text always ends with a NUL;
 * a buffer too small gives LC0CORE_BUFFER_TOO_SMALL.
 */
#ifndef LC0CORE_RULES_H
#define LC0CORE_RULES_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
enum {
  LC0CORE_MAX_MOVES = 256,        /* more than any position has: a big enough move buffer */
  LC0CORE_MAX_TEXT = 1024,        /* longest FEN or move text read */
  LC0CORE_MAX_PERFT_DEPTH = 10,
  LC0CORE_MAX_GAME_PLIES = 100000
};

/* Positions given as FEN (NULL = the standard start position). */
int lc0core_fen_normalize(const char* fen, int chess960, char* out, size_t capacity);
int lc0core_legal_moves(const char* fen, int chess960, uint16_t* moves, int capacity, int* count);
/* UCI text of legal moves of the position, separated by single spaces. */
int lc0core_moves_to_uci(const char* fen, int chess960, const uint16_t* moves, int count,
                         char* out, size_t capacity);
int lc0core_perft(const char* fen, int chess960, int depth, uint64_t* nodes);
/* Per root move: its perft(depth - 1) (depth >= 1), in move generation order. */
int lc0core_perft_divide(const char* fen, int chess960, int depth, uint16_t* moves,
                         uint64_t* nodes, int capacity, int* count);

/* A game: its first position and the moves played since. */
typedef struct lc0core_game lc0core_game;
typedef struct {
  int positions;              /* first position + plies played */
  int white_to_move;
  int legal_moves;
  int in_check;
  int checkmate;
  int stalemate;
  int rule50;                 /* plies since the last capture or pawn move */
  int fullmove;
  int insufficient_material;  /* lc0's: no side has mating material */
  int repetitions;            /* lc0's count of earlier equal positions */
  int cycle_length;           /* plies back to the last equal position, 0 if none */
} lc0core_game_status;

int lc0core_game_new(const char* fen, int chess960, lc0core_game** out);
void lc0core_game_free(lc0core_game* game);
int lc0core_game_push_uci(lc0core_game* game, const char* move);
/* A PGN SAN token (as python-chess's reader cuts it) played when the core
 * is sure it names the move python-chess's Board.parse_san names (standard
 * chess): its UCI in out[capacity] and *played = 1; otherwise *played = 0
 * and the game is as it was (the caller asks python-chess). */
int lc0core_game_push_san(lc0core_game* game, const char* san, char* out, size_t capacity, int* played);
int lc0core_game_push(lc0core_game* game, uint16_t move);
int lc0core_game_pop(lc0core_game* game);   /* the first position stays */
int lc0core_game_legal_moves(const lc0core_game* game, uint16_t* moves, int capacity, int* count);
int lc0core_game_moves_to_uci(const lc0core_game* game, const uint16_t* moves, int count,
                              char* out, size_t capacity);
int lc0core_game_fen(const lc0core_game* game, char* out, size_t capacity);
int lc0core_game_get_status(const lc0core_game* game, lc0core_game_status* out);
int lc0core_game_perft_divide(const lc0core_game* game, int depth, uint16_t* moves,
                              uint64_t* nodes, int capacity, int* count);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
