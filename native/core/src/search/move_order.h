// move_order.h - python-chess's legal move generation order. lc0 sorts edges
// by prior with an unspecified order among equal priors; the reference
// search (lc0_rocm/search) keeps python-chess's order there, so the native
// search breaks ties the same way and grows the same trees.
#pragma once
#include "../position.h"

namespace lc0core {
namespace search {

// Sorts `moves` (legal moves of `pos`) into python-chess's generation order.
void sort_like_python_chess(const Position& pos, MoveList* moves);

}  // namespace search
}  // namespace lc0core
