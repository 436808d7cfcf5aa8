/* lc0core_base.h - what every part of the native core's C ABI shares: the
 * ABI version, the status codes and the thread-local last error.
 *
 * Every entry point returns a status (0 = LC0CORE_OK) unless it says
 * otherwise; on failure lc0core_last_error() holds a one-line message for
 * the calling thread until its next call into the core.
 */
#ifndef LC0CORE_BASE_H
#define LC0CORE_BASE_H
#ifdef __cplusplus
extern "C" {
#endif
/* LC0CORE_CDEF_BEGIN */
enum { LC0CORE_ABI_VERSION = 1 };
enum {
  LC0CORE_OK = 0,
  LC0CORE_INVALID_ARGUMENT = 1,   /* NULL, out of range, unterminated or over-long string */
  LC0CORE_BAD_FEN = 2,            /* malformed or impossible FEN */
  LC0CORE_ILLEGAL_MOVE = 3,       /* not a legal move (or not UCI text) */
  LC0CORE_BUFFER_TOO_SMALL = 4,   /* a caller's buffer cannot hold the answer */
  LC0CORE_OUT_OF_MEMORY = 5,
  LC0CORE_INTERNAL_ERROR = 6      /* a bug: please report the message */
};
int lc0core_abi_version(void);
const char* lc0core_last_error(void);
/* LC0CORE_CDEF_END */
#ifdef __cplusplus
}
#endif
#endif
