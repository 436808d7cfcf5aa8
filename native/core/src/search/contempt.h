// contempt.h - lc0's WDLRescale (contempt), as lc0_rocm/search/contempt.py's
// wdl_rescale; the rescale ratio and diff are computed on the Python side.
#pragma once
#include <algorithm>
#include <cmath>
#include "fastmath.h"

namespace lc0core {
namespace search {

enum ContemptMode : int { kContemptNone = 0, kContemptWhite = 1, kContemptBlack = 2 };

// (v, d) rescaled in place; returns mu (0 when the WDL is too extreme).
inline double wdl_rescale(double* v, double* d, double ratio, double diff, double sign,
                          bool invert, double max_s) {
  if (invert) {
    diff = -diff;
    ratio = 1.0 / ratio;
  }
  const double w = (1 + *v - *d) / 2;
  const double l = (1 - *v - *d) / 2;
  const double eps = 0.0001;
  if (!(eps < w && w < 1 - eps && eps < *d && *d < 1 - eps && eps < l && l < 1 - eps)) return 0.0;
  const double a = fast_log(1 / l - 1);
  const double b = fast_log(1 / w - 1);
  double s = 2 / (a + b);
  if (!invert) s = std::min(max_s, s);
  const double mu = (a - b) / (a + b);
  double s_new = s * ratio;
  if (invert) {
    std::swap(s, s_new);
    s = std::min(max_s, s);
  }
  const double mu_new = mu + sign * s * s * diff;
  const double w_new = fast_logistic((-1.0 + mu_new) / s_new);
  const double l_new = fast_logistic((-1.0 - mu_new) / s_new);
  *v = w_new - l_new;
  *d = std::max(0.0, 1.0 - w_new - l_new);
  return mu_new;
}

}  // namespace search
}  // namespace lc0core
